//! PMU events: `pmu/terms/`, sysfs event aliases (`name` on whichever PMU
//! has it, every core PMU on hybrid machines), FreeBSD qualifiers through
//! the PMU's format fields, and the unknown-name error with suggestions.

use std::sync::Arc;

use pmc_linux::attr::{Attr, EventConfig};
use pmc_linux::pmu::{self as lpmu, Pmu};

use super::description::{self, MachineDescription};
use super::{Planned, Resolved, Sysfs, caps, native, not_supported};
use crate::backend::EventRequest;
use crate::spec::{self, Qualifiers};
use crate::{Class, Error, Result};

/// The FreeBSD qualifiers that set format fields, as PMU terms.
pub(super) fn qualifier_terms(q: &Qualifiers) -> Vec<lpmu::Term> {
    use lpmu::{Term, TermValue as V};
    let mut t = Vec::new();
    if q.edge {
        t.push(Term::new("edge", V::Flag));
    }
    if q.inv {
        t.push(Term::new("inv", V::Flag));
    }
    if let Some(c) = q.cmask {
        t.push(Term::new("cmask", V::Number(u64::from(c))));
    }
    if let Some(u) = q.umask {
        t.push(Term::new("umask", V::Number(u64::from(u))));
    }
    if let Some(th) = q.threshold {
        t.push(Term::new("threshold", V::Number(u64::from(th))));
    }
    if q.anythread {
        t.push(Term::new("any", V::Flag));
    }
    t
}

/// Checks that `pmu` has a format field for every qualifier term.
pub(super) fn check_qualifier_fields(pmu: &Pmu, terms: &[lpmu::Term]) -> Result<()> {
    for t in terms {
        if pmu.format(&t.name).is_none() {
            let fields: Vec<&str> = pmu.formats.iter().map(|f| f.name.as_str()).collect();
            return Err(Error::NotSupported {
                what: format!("qualifier `{}` on PMU {}", t.name, pmu.name),
                why: format!(
                    "the PMU has no `{}` format field (it has: {})",
                    t.name,
                    fields.join(", ")
                ),
                source: None,
            });
        }
    }
    Ok(())
}

pub(super) fn spec_terms(terms: &[spec::Term]) -> Vec<lpmu::Term> {
    terms
        .iter()
        .map(|t| {
            lpmu::Term::new(
                t.name.clone(),
                match &t.value {
                    spec::TermValue::Flag => lpmu::TermValue::Flag,
                    spec::TermValue::Number(n) => lpmu::TermValue::Number(*n),
                    spec::TermValue::Str(s) => lpmu::TermValue::Str(s.clone()),
                },
            )
        })
        .collect()
}

/// An unknown PMU is an unknown name (EINVAL) when the event names it;
/// elsewhere (a kernel without the uprobe PMU) it is a missing feature.
fn unknown_pmu(e: pmc_linux::Error) -> Error {
    match e {
        pmc_linux::Error::NoSuchPmu {
            name,
            root,
            closest,
            present,
        } => Error::UnknownEvent {
            what: format!("PMU `{name}`"),
            why: format!(
                "there is no such PMU in {root}; this machine has: {}",
                if closest.is_empty() {
                    &present
                } else {
                    &closest
                }
                .join(", ")
            ),
            reason: crate::Reason::NoSuchPmu { name, closest }.boxed(),
        },
        other => not_supported(other),
    }
}

/// A `pmu/terms/` event (and named aliases resolved to one).
pub(super) fn pmu_event(
    sysfs: &Sysfs,
    d: &MachineDescription,
    request: &EventRequest<'_>,
    pmu: &str,
    terms: &[lpmu::Term],
) -> Result<Resolved> {
    let fresh: Arc<MachineDescription>;
    let (d, pmu) = match d.pmu(pmu) {
        Ok(p) => (d, p),
        // A PMU driver loaded since the description was read may have it.
        Err(e) => match description::refreshed_if_stale(sysfs, d) {
            Some(f) => {
                fresh = f;
                (&*fresh, fresh.pmu(pmu).map_err(unknown_pmu)?)
            }
            None => return Err(unknown_pmu(e)),
        },
    };
    let q = qualifier_terms(&request.spec.qualifiers);
    check_qualifier_fields(pmu, &q)?;
    let mut all = terms.to_vec();
    all.extend(q);
    let enc = pmu.encode(&all).map_err(not_supported)?;
    if request.mode.is_process() && !d.is_core(pmu) && pmu.cpus.is_some() {
        return Err(Error::NotSupported {
            what: format!("process mode on PMU {}", pmu.name),
            why: format!(
                "{} is an uncore/system PMU (it counts on CPUs {:?}); allocate it in SC or SS \
                 mode on one of those CPUs",
                pmu.name,
                pmu.cpus.clone().unwrap_or_default()
            ),
            source: None,
        });
    }
    let config = EventConfig::Dynamic {
        pmu_type: pmu.type_id,
        config: enc.config[0],
        config1: enc.config[1],
        config2: enc.config[2],
        config3: enc.config[3],
    };
    let described: Vec<String> = terms
        .iter()
        .map(|t| match &t.value {
            lpmu::TermValue::Flag => t.name.clone(),
            lpmu::TermValue::Number(n) => format!("{}={n:#x}", t.name),
            lpmu::TermValue::Str(s) => format!("{}={s}", t.name),
        })
        .collect();
    Ok(Resolved {
        planned: vec![Planned {
            attr: Attr::new(config),
            cpus: pmu.cpus.clone(),
        }],
        class: Class::Pmu(pmu.name.clone()),
        caps: caps::pmu_capabilities(pmu, d),
        description: format!("{}/{}/", pmu.name, described.join(",")).into(),
        string: None,
    })
}

/// Each `(pmu, terms)` encoded as [`pmu_event`] encodes it, as one event
/// whose attrs cover them all (an event on every core PMU of a hybrid
/// machine); `None` for no placement.
pub(super) fn on_each_pmu<'t>(
    sysfs: &Sysfs,
    d: &MachineDescription,
    request: &EventRequest<'_>,
    placements: impl IntoIterator<Item = (&'t str, &'t [lpmu::Term])>,
) -> Option<Result<Resolved>> {
    let mut planned = Vec::new();
    let mut last = None;
    for (pmu, terms) in placements {
        match pmu_event(sysfs, d, request, pmu, terms) {
            Ok(mut r) => {
                planned.append(&mut r.planned);
                last = Some(r);
            }
            Err(e) => return Some(Err(e)),
        }
    }
    last.map(|r| Ok(Resolved { planned, ..r }))
}

/// The PMUs that have an event alias `lower` (core PMUs first) and its
/// spelling there.
fn alias_owners<'d>(d: &'d MachineDescription, lower: &str) -> (Vec<&'d Pmu>, String) {
    let mut owners: Vec<&Pmu> = d
        .pmus()
        .iter()
        .filter(|p| p.events.iter().any(|e| e.name.eq_ignore_ascii_case(lower)))
        .collect();
    owners.sort_by_key(|p| !d.is_core(p));
    let alias = owners
        .first()
        .and_then(|p| p.events.iter().find(|e| e.name.eq_ignore_ascii_case(lower)))
        .map(|e| e.name.clone())
        .unwrap_or_default();
    (owners, alias)
}

/// A name the parser did not know: a sysfs event alias of some PMU (core
/// PMUs first), else a native event of the CPU, else an error listing the
/// closest known names.
pub(super) fn named_event(
    sysfs: &Sysfs,
    d: &MachineDescription,
    request: &EventRequest<'_>,
    name: &str,
) -> Result<Resolved> {
    let lower = name.to_ascii_lowercase();
    if let Some(found) = known_event(sysfs, d, request, name, &lower) {
        return found;
    }
    // Missed: a PMU driver loaded since the description was read may have it.
    let fresh = description::refreshed_if_stale(sysfs, d);
    let d = fresh.as_deref().unwrap_or(d);
    if fresh.is_some()
        && let Some(found) = known_event(sysfs, d, request, name, &lower)
    {
        return found;
    }
    let near = pmc_suggest::closest(&lower, d.known_names().iter().map(String::as_str), 5);
    Err(Error::UnknownEvent {
        reason: crate::Reason::UnknownEvent {
            closest: near.clone(),
        }
        .boxed(),
        what: format!("event `{name}`"),
        why: format!(
            "it is not a generic name nor an event alias of any PMU in {}, {}{}; other \
             native events need the PMU form `cpu/event=0x..,umask=0x../`",
            d.pmu_root().display(),
            native::why_not(d),
            if near.is_empty() {
                String::new()
            } else {
                format!(" (closest: {})", near.join(", "))
            }
        ),
    })
}

/// `name` as an alias, a native event or (feature `libpfm`) a libpfm4
/// name; `None` when none has it.
fn known_event(
    sysfs: &Sysfs,
    d: &MachineDescription,
    request: &EventRequest<'_>,
    name: &str,
    lower: &str,
) -> Option<Result<Resolved>> {
    let (owners, alias) = alias_owners(d, lower);
    if let Some(first) = owners.first() {
        let term = [lpmu::Term::new(alias, lpmu::TermValue::Flag)];
        let cores: Vec<&&Pmu> = owners.iter().filter(|p| d.is_core(p)).collect();
        if d.is_core(first) && cores.len() > 1 {
            // Hybrid: the alias on every core PMU that has it.
            return on_each_pmu(
                sysfs,
                d,
                request,
                cores.iter().map(|p| (p.name.as_str(), &term[..])),
            );
        }
        return Some(pmu_event(sysfs, d, request, &first.name, &term));
    }
    if let Some(found) = native::native_event(sysfs, d, request, lower) {
        return Some(found);
    }
    if let Some(found) = native::armv8_event(sysfs, d, request, lower) {
        return Some(found);
    }
    #[cfg(feature = "libpfm")]
    if let Ok(attr) = pmc_linux::pfm::encode(name) {
        let class = match attr.type_id() {
            0 => Class::Hardware,
            1 => Class::Software,
            3 => Class::Cache,
            4 => Class::Raw,
            _ => Class::Pmu("libpfm4".into()),
        };
        return Some(Ok(Resolved {
            planned: vec![Planned { attr, cpus: None }],
            class,
            caps: caps::class_capabilities(&Class::Raw, d),
            description: format!("{name} (libpfm4)").into(),
            string: None,
        }));
    }
    let _ = name;
    None
}
