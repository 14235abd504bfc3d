//! The event specifier parser: a single pass over the text, no I/O.
//!
//! Every error points at a column (1-based, in characters) and names the
//! offending token; where the set of valid words is known it lists the
//! closest ones.

use super::names::{self, normalize};
use super::{
    BreakpointAccess, EventName, EventSpec, Precise, Privilege, ProbeKind, ProbeSpec, Qualifiers,
    SpecError, Term, TermValue,
};

mod forms;

/// Qualifiers accepted after a `,`, as documented on [`super`].
const QUALIFIERS: &[&str] = &[
    "usr",
    "os",
    "edge",
    "inv",
    "cmask",
    "count",
    "umask",
    "mask",
    "threshold",
    "anythread",
    "precise",
    "period",
    "freq",
    "filter",
    "pinned",
    "exclusive",
];

/// perf's event modifiers (`instructions:u`, `cpu/…/ppp`).
const MODIFIERS: &str = "ukhGHIpPSDWe";

/// Parses an event specifier.
///
/// ```
/// use pmc::spec::{parse, EventName, HardwareEvent};
/// let spec = parse("instructions,usr").unwrap();
/// assert_eq!(spec.event, EventName::Hardware(HardwareEvent::Instructions));
/// assert!(spec.qualifiers.privilege.unwrap().user);
/// assert!(parse("instrutions").unwrap_err().alternatives.contains(&"instructions".to_string()));
/// ```
pub fn parse(spec: &str) -> Result<EventSpec, SpecError> {
    Parser { text: spec }.parse()
}

struct Parser<'a> {
    text: &'a str,
}

/// A piece of the specifier with its byte offset.
#[derive(Clone, Copy)]
struct Piece<'a> {
    at: usize,
    s: &'a str,
}

impl<'a> Piece<'a> {
    fn sub(self, from: usize, to: usize) -> Piece<'a> {
        Piece {
            at: self.at + from,
            s: &self.s[from..to],
        }
    }
    fn from(self, from: usize) -> Piece<'a> {
        self.sub(from, self.s.len())
    }
    fn until(self, to: usize) -> Piece<'a> {
        self.sub(0, to)
    }
}

impl<'a> Parser<'a> {
    fn error(&self, at: usize, token: &str, message: impl Into<String>) -> SpecError {
        self.error_with(at, token, message, Vec::new())
    }

    fn error_with(
        &self,
        at: usize,
        token: &str,
        message: impl Into<String>,
        alternatives: Vec<String>,
    ) -> SpecError {
        let at = at.min(self.text.len());
        // Offsets are always char boundaries here; be safe on bad input anyway.
        let column = self
            .text
            .char_indices()
            .take_while(|(i, _)| *i < at)
            .count()
            + 1;
        SpecError {
            column,
            token: token.to_string(),
            message: message.into(),
            alternatives,
        }
    }

    fn parse(&self) -> Result<EventSpec, SpecError> {
        let all = Piece {
            at: 0,
            s: self.text,
        };
        if self.text.trim().is_empty() {
            return Err(self.error(0, self.text, "empty event specifier"));
        }
        if let Some(i) = self.text.find('\0') {
            return Err(self.error(i, "\\0", "NUL byte in event specifier"));
        }
        if let Some((i, c)) = self
            .text
            .char_indices()
            .find(|(_, c)| c.is_control() || !c.is_ascii())
        {
            return Err(self.error(i, &c.to_string(), "event specifiers are printable ASCII"));
        }
        let mut spec = EventSpec {
            text: self.text.to_string(),
            class_prefix: None,
            event: EventName::Named(String::new()),
            qualifiers: Qualifiers::default(),
        };
        let rest = if starts_with_ignore_case(self.text, "mem:") {
            let (head, rest) = split_qualifiers(all);
            spec.event = self.breakpoint(head.from(4))?;
            rest
        } else if let Some(kind) = probe_kind(self.text) {
            let colon = self.text.find(':').expect("probe prefix ends with ':'");
            // Qualifiers start after the location's last ':'.
            let last_colon = self.text.rfind(':').unwrap_or(colon);
            let (head, rest) = match self.text[last_colon..].find(',') {
                Some(c) => (
                    all.until(last_colon + c),
                    Some(all.from(last_colon + c + 1)),
                ),
                None => (all, None),
            };
            spec.event = EventName::Probe(self.probe(kind, head.from(colon + 1))?);
            rest
        } else if let Some(slash) = pmu_slash(self.text) {
            self.pmu_form(all, slash, &mut spec)?
        } else {
            let (head, rest) = split_qualifiers(all);
            self.named_form(head, &mut spec)?;
            rest
        };
        if let Some(rest) = rest {
            self.qualifiers(rest, &mut spec.qualifiers)?;
        }
        Ok(spec)
    }

    /// `name[:modifiers]`, `subsys:event[:modifiers]`, `rNNNN[:modifiers]`,
    /// FreeBSD names with class prefixes.
    fn named_form(&self, head: Piece<'a>, spec: &mut EventSpec) -> Result<(), SpecError> {
        let trimmed_start = head.s.len() - head.s.trim_start().len();
        let head = head.sub(trimmed_start, head.s.trim_end().len().max(trimmed_start));
        if head.s.is_empty() {
            return Err(self.error(head.at, head.s, "missing event name"));
        }
        if let Some((i, c)) = head
            .s
            .char_indices()
            .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, ' ' | '.' | '_' | '-' | ':')))
        {
            return Err(self.error(
                head.at + i,
                &c.to_string(),
                "unexpected character in event name",
            ));
        }
        // libpfm4 native names (`amd64_fam17h::retired_instructions:u`)
        // go to the backend whole.
        if head.s.as_bytes().windows(2).any(|w| w == b"::") {
            spec.event = EventName::Named(head.s.to_string());
            return Ok(());
        }
        let (name, mods) = match head.s.rfind(':') {
            Some(c) if is_modifier_list(&head.s[c + 1..]) && !head.s[c + 1..].is_empty() => {
                let before = &head.s[..c];
                // `instructions:u` or `sched:sched_switch:u`; a lone
                // `sched:u` is read as a tracepoint named `u`.
                if before.contains(':') || self.static_name(before).is_some() || is_raw(before) {
                    (head.until(c), Some(head.from(c + 1)))
                } else {
                    (head, None)
                }
            }
            _ => (head, None),
        };
        if let Some(mods) = mods {
            self.modifiers(mods, &mut spec.qualifiers)?;
        }
        if let Some(c) = name.s.find(':') {
            let (subsystem, event) = (&name.s[..c], &name.s[c + 1..]);
            for (part, at) in [(subsystem, name.at), (event, name.at + c + 1)] {
                if part.is_empty() || part.contains(':') || part.contains(' ') {
                    return Err(self.error(
                        at,
                        part,
                        "a tracepoint is `subsystem:event` (e.g. `syscalls:sys_enter_write`)",
                    ));
                }
            }
            spec.event = EventName::Tracepoint {
                subsystem: subsystem.to_string(),
                event: event.to_string(),
            };
            return Ok(());
        }
        if is_raw(name.s) {
            let config = u64::from_str_radix(&name.s[1..], 16).map_err(|_| {
                self.error(name.at, name.s, "raw event config does not fit in 64 bits")
            })?;
            spec.event = EventName::Raw(config);
            return Ok(());
        }
        if let Some((prefix, event)) = self.static_name(name.s).transpose_prefix(self, name)? {
            spec.class_prefix = prefix.map(str::to_string);
            spec.event = event;
            return Ok(());
        }
        // Not a static name: close to one is a typo; anything else is left
        // for the backend (sysfs aliases, pmu-events names, libpfm4).
        let normalized = normalize(name.s);
        let candidates = names::generic_name_table();
        let near = pmc_suggest::closest(name.s, candidates.iter().map(|(n, _)| n.as_str()), 5);
        // Not typos: pmu-events names (`inst_retired.any`), a generic name
        // in other separators (perf's names are separator-exact: ARM's
        // sysfs `cpu_cycles` is not `cpu-cycles`), and a generic name with
        // a `-suffix` (Intel's sysfs `cycles-t`).
        let extends_generic = candidates.iter().any(|(n, _)| {
            names::strip_normalized_prefix(&normalized, n).is_some_and(|r| r.starts_with('-'))
        });
        let typo = !name.s.contains('.')
            && !extends_generic
            && near.first().is_some_and(|n| {
                let edits = pmc_suggest::edit_distance(&normalized, &normalize(n));
                edits > 0 && edits <= 2.min(normalized.len() / 4)
            });
        if typo {
            return Err(self.error_with(name.at, name.s, "unknown event", near));
        }
        spec.event = EventName::Named(name.s.to_string());
        Ok(())
    }

    /// A name known without I/O: perf's names, FreeBSD aliases, `SOFT-*`,
    /// `tsc`, and class-prefixed forms of those. The outer `Err` is a
    /// definite rejection (e.g. a SOFT event Linux lacks).
    fn static_name(&self, name: &str) -> Option<StaticName> {
        if let Some(e) = names::perf_generic(name) {
            return Some(StaticName::Plain(e));
        }
        let normalized = normalize(name);
        if let Some(e) = names::freebsd_alias(&normalized) {
            return Some(StaticName::Plain(e));
        }
        if normalized == "tsc" {
            return Some(StaticName::Plain(tsc()));
        }
        let (prefix, rest) = names::split_class_prefix(&normalized)?;
        match prefix {
            "soft" => Some(match names::soft_event(rest) {
                Some((_, Some(l))) => StaticName::Prefixed(
                    prefix,
                    names::perf_generic(l).expect("SOFT table maps to perf names"),
                ),
                _ => StaticName::SoftForHwpmc,
            }),
            // The TSC class has one event, the time-stamp counter: `TSC-TSC`
            // in libpmc's old tables (`__PMC_EV(TSC, TSC, tsc)`), `TSC-cycles`
            // since pmc_events.h aliased it (`tsc_event_table`: "cycles");
            // `tsc_allocate_pmc` refuses any other event.
            "tsc" if rest == "tsc" || rest == "cycles" => Some(StaticName::Prefixed(prefix, tsc())),
            "tsc" => Some(StaticName::UnknownTsc),
            _ => {
                let event = names::perf_generic(rest)
                    .or_else(|| names::freebsd_alias(rest))
                    .unwrap_or_else(|| EventName::Named(rest.to_string()));
                Some(StaticName::Prefixed(prefix, event))
            }
        }
    }

    fn modifiers(&self, mods: Piece<'_>, q: &mut Qualifiers) -> Result<(), SpecError> {
        let mut privilege: Option<Privilege> = None;
        let mut precise = 0u8;
        for (i, c) in mods.s.char_indices() {
            let at = mods.at + i;
            match c {
                'u' => privilege.get_or_insert_with(Privilege::default).user = true,
                'k' => privilege.get_or_insert_with(Privilege::default).kernel = true,
                'h' => privilege.get_or_insert_with(Privilege::default).hypervisor = true,
                'G' => q.guest_only = true,
                'H' => q.host_only = true,
                'I' => q.exclude_idle = true,
                'S' => q.sample_read = true,
                'D' => q.pinned = true,
                'W' => q.weak_group = true,
                'e' => q.exclusive = true,
                'P' => q.precise = Some(Precise::Max),
                'p' => {
                    precise += 1;
                    if precise > 3 {
                        return Err(self.error(
                            at,
                            mods.s,
                            "at most three `p` modifiers (precise levels 0-3)",
                        ));
                    }
                    q.precise = Some(Precise::Level(precise));
                }
                other => {
                    return Err(self.error_with(
                        at,
                        &other.to_string(),
                        "unknown modifier",
                        MODIFIERS.chars().map(|c| c.to_string()).collect(),
                    ));
                }
            }
        }
        if privilege.is_some() {
            q.privilege = privilege;
        }
        Ok(())
    }

    /// `name=value,…` after the event; `filter=` swallows the rest.
    fn qualifiers(&self, rest: Piece<'_>, q: &mut Qualifiers) -> Result<(), SpecError> {
        let mut usr = false;
        let mut os = false;
        let mut remaining = rest;
        loop {
            let (item, next) = match remaining.s.find(',') {
                _ if starts_with_ignore_case(remaining.s.trim_start(), "filter=") => {
                    (remaining, None)
                }
                Some(c) => (remaining.until(c), Some(remaining.from(c + 1))),
                None => (remaining, None),
            };
            let lead = item.s.len() - item.s.trim_start().len();
            let item = item.sub(lead, item.s.trim_end().len().max(lead));
            if item.s.is_empty() {
                return Err(self.error(item.at, "", "empty qualifier (stray `,`)"));
            }
            let (key, value) = match item.s.find('=') {
                Some(e) => (item.until(e), Some(item.from(e + 1))),
                None => (item, None),
            };
            let name = key.s.trim().to_ascii_lowercase();
            let need_value = |what: &str| {
                value.ok_or_else(|| {
                    self.error(key.at, key.s, format!("`{name}` needs a value: {what}"))
                })
            };
            let no_value = || match value {
                Some(v) => Err(self.error(v.at, v.s, format!("`{name}` takes no value"))),
                None => Ok(()),
            };
            match name.as_str() {
                "usr" => {
                    no_value()?;
                    usr = true;
                }
                "os" => {
                    no_value()?;
                    os = true;
                }
                "edge" => {
                    no_value()?;
                    q.edge = true;
                }
                "inv" => {
                    no_value()?;
                    q.inv = true;
                }
                "anythread" => {
                    no_value()?;
                    q.anythread = true;
                }
                "pinned" => {
                    no_value()?;
                    q.pinned = true;
                }
                "exclusive" => {
                    no_value()?;
                    q.exclusive = true;
                }
                "cmask" | "count" => {
                    q.cmask = Some(self.number_u32(need_value("`cmask=N`")?)?);
                }
                "umask" | "mask" => {
                    q.umask = Some(self.number_u32(need_value("`umask=N`")?)?);
                }
                "threshold" => {
                    q.threshold = Some(self.number_u32(need_value("`threshold=N`")?)?);
                }
                "precise" => {
                    q.precise = Some(match value {
                        None => Precise::Max,
                        Some(v) => {
                            let n = self.number(v)?;
                            if n > 3 {
                                return Err(self.error(
                                    v.at,
                                    v.s,
                                    "precise level must be 0, 1, 2 or 3",
                                ));
                            }
                            Precise::Level(n as u8)
                        }
                    });
                }
                "period" => {
                    let v = need_value("`period=N` (events between samples)")?;
                    let n = self.number(v)?;
                    if n == 0 {
                        return Err(self.error(v.at, v.s, "a sampling period must be at least 1"));
                    }
                    q.period = Some(n);
                }
                "freq" => {
                    let v = need_value("`freq=HZ` (samples per second)")?;
                    let n = self.number(v)?;
                    if n == 0 {
                        return Err(self.error(
                            v.at,
                            v.s,
                            "a sampling frequency must be at least 1 Hz",
                        ));
                    }
                    q.freq = Some(n);
                }
                "filter" => {
                    let v = need_value("`filter=EXPR` (a tracepoint filter)")?;
                    if v.s.trim().is_empty() {
                        return Err(self.error(v.at, v.s, "empty filter expression"));
                    }
                    q.filter = Some(v.s.trim().to_string());
                }
                _ => {
                    return Err(self.error_with(
                        key.at,
                        key.s,
                        "unknown qualifier",
                        closest_or_all(&name, QUALIFIERS),
                    ));
                }
            }
            match next {
                Some(n) => remaining = n,
                None => break,
            }
        }
        if q.period.is_some() && q.freq.is_some() {
            return Err(self.error(
                rest.at,
                rest.s,
                "`period=` and `freq=` exclude each other: sample by count or by frequency",
            ));
        }
        if usr || os {
            q.privilege = Some(Privilege {
                user: usr,
                kernel: os,
                hypervisor: false,
            });
        }
        Ok(())
    }

    /// A number as `strtoul(…, 0)` reads it: `0x` hex, leading-`0` octal,
    /// decimal otherwise.
    fn number(&self, v: Piece<'_>) -> Result<u64, SpecError> {
        let s = v.s.trim();
        let parsed = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            u64::from_str_radix(h, 16)
        } else if s.len() > 1 && s.starts_with('0') {
            u64::from_str_radix(&s[1..], 8)
        } else {
            s.parse::<u64>()
        };
        parsed.map_err(|_| {
            self.error(
                v.at,
                v.s,
                "expected a number (decimal, 0x hex or 0-prefixed octal) that fits in 64 bits",
            )
        })
    }

    fn number_u32(&self, v: Piece<'_>) -> Result<u32, SpecError> {
        let n = self.number(v)?;
        u32::try_from(n).map_err(|_| self.error(v.at, v.s, "value does not fit in 32 bits"))
    }
}

/// The result of a static name lookup.
enum StaticName {
    Plain(EventName),
    Prefixed(&'static str, EventName),
    /// A `SOFT-*` name Linux has no software event for: left to the
    /// backend (hwpmc counts it; Linux says why not).
    SoftForHwpmc,
    UnknownTsc,
}

trait TransposePrefix {
    fn transpose_prefix(
        self,
        parser: &Parser<'_>,
        name: Piece<'_>,
    ) -> Result<Option<(Option<&'static str>, EventName)>, SpecError>;
}

impl TransposePrefix for Option<StaticName> {
    fn transpose_prefix(
        self,
        parser: &Parser<'_>,
        name: Piece<'_>,
    ) -> Result<Option<(Option<&'static str>, EventName)>, SpecError> {
        match self {
            None => Ok(None),
            Some(StaticName::Plain(e)) => Ok(Some((None, e))),
            Some(StaticName::Prefixed(p, e)) => Ok(Some((Some(p), e))),
            // hwpmc counts it (libpmc's soft class is the kernel's
            // registered list, GETDYNEVENTINFO); Linux refuses it at
            // resolution with `soft_without_linux`'s reason.
            Some(StaticName::SoftForHwpmc) => {
                Ok(Some((Some("soft"), EventName::Named(name.s.to_string()))))
            }
            Some(StaticName::UnknownTsc) => Err(parser.error_with(
                name.at,
                name.s,
                "FreeBSD's TSC class has one event, the time-stamp counter",
                vec!["TSC-cycles".to_string(), "TSC-TSC".to_string()],
            )),
        }
    }
}

fn tsc() -> EventName {
    EventName::Pmu {
        pmu: "msr".into(),
        terms: vec![Term {
            name: "tsc".into(),
            value: TermValue::Flag,
        }],
    }
}

/// Why Linux cannot count a `SOFT-*` event the parser let through for
/// hwpmc: a FreeBSD soft event without a Linux software event (with what
/// to use instead), or a name that is no FreeBSD soft event Linux knows
/// (with the closest ones). `None` for anything else. The error is the one
/// the parser gave before these events reached hwpmc.
// Only the Linux resolver asks (and the tests).
#[cfg_attr(
    not(any(
        test,
        all(
            any(target_os = "linux", target_os = "android"),
            not(pmc_force_portable)
        )
    )),
    allow(dead_code)
)]
pub(crate) fn soft_without_linux(spec: &EventSpec) -> Option<SpecError> {
    let EventName::Named(text) = &spec.event else {
        return None;
    };
    if spec.class_prefix.as_deref() != Some("soft") {
        return None;
    }
    let normalized = normalize(text);
    let (_, rest) = names::split_class_prefix(&normalized)?;
    let parser = Parser { text: &spec.text };
    let at = spec.text.find(text.as_str()).unwrap_or(0);
    match names::soft_event(rest) {
        Some((_, Some(_))) => None,
        Some((soft, None)) => Some(parser.error(
            at,
            text,
            format!(
                "FreeBSD's SOFT-{soft} has no Linux equivalent; {}",
                names::soft_event_advice(soft)
            ),
        )),
        None => Some(
            parser.error_with(
                at,
                text,
                "unknown SOFT event",
                closest_or_all(
                    rest,
                    &names::SOFT_EVENTS
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>(),
                )
                .into_iter()
                .map(|n| format!("SOFT-{n}"))
                .collect(),
            ),
        ),
    }
}

fn closest_or_all(word: &str, candidates: &[&str]) -> Vec<String> {
    let near = pmc_suggest::closest(word, candidates.iter().copied(), 3);
    if near.is_empty() {
        candidates.iter().map(|c| c.to_string()).collect()
    } else {
        near
    }
}

fn probe_kind(text: &str) -> Option<ProbeKind> {
    [
        ("uprobe:", ProbeKind::Uprobe),
        ("uretprobe:", ProbeKind::Uretprobe),
        ("kprobe:", ProbeKind::Kprobe),
        ("kretprobe:", ProbeKind::Kretprobe),
    ]
    .into_iter()
    .find(|(p, _)| starts_with_ignore_case(text, p))
    .map(|(_, k)| k)
}

/// The first `/` of a `pmu/…/` form: a PMU name (no `:` or `,` before it).
fn pmu_slash(text: &str) -> Option<usize> {
    let slash = text.find('/')?;
    let before = &text[..slash];
    (!before.contains(':') && !before.contains(',')).then_some(slash)
}

fn split_qualifiers(p: Piece<'_>) -> (Piece<'_>, Option<Piece<'_>>) {
    match p.s.find(',') {
        Some(c) => (p.until(c), Some(p.from(c + 1))),
        None => (p, None),
    }
}

fn is_modifier_list(s: &str) -> bool {
    s.chars().all(|c| MODIFIERS.contains(c))
}

fn is_raw(s: &str) -> bool {
    s.len() > 1
        && (s.starts_with('r') || s.starts_with('R'))
        && s[1..].chars().all(|c| c.is_ascii_hexdigit())
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.as_bytes()
        .get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}
