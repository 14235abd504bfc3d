//! The forms with a structure of their own: `mem:` breakpoints, uprobe
//! and kprobe targets, and `pmu/term=value,.../` events.

use super::*;

impl<'a> Parser<'a> {
    /// `ADDR[/LEN][:ACCESS]` after `mem:`.
    pub(super) fn breakpoint(&self, p: Piece<'_>) -> Result<EventName, SpecError> {
        let (loc, access) = match p.s.find(':') {
            Some(c) => (p.until(c), Some(p.from(c + 1))),
            None => (p, None),
        };
        let (addr, len) = match loc.s.find('/') {
            Some(s) => (loc.until(s), Some(loc.from(s + 1))),
            None => (loc, None),
        };
        if addr.s.is_empty() {
            return Err(self.error(addr.at, addr.s, "missing breakpoint address (`mem:0xADDR`)"));
        }
        let addr = self.number(addr)?;
        let len = len.map(|l| self.number(l)).transpose()?;
        let access = match access.map(|a| (a, a.s.to_ascii_lowercase())) {
            None => BreakpointAccess::ReadWrite,
            Some((_, a)) if a == "r" => BreakpointAccess::Read,
            Some((_, a)) if a == "w" => BreakpointAccess::Write,
            Some((_, a)) if a == "rw" || a == "wr" => BreakpointAccess::ReadWrite,
            Some((_, a)) if a == "x" => BreakpointAccess::Execute,
            Some((a, _)) => {
                return Err(self.error_with(
                    a.at,
                    a.s,
                    "breakpoint access must be one of",
                    ["r", "w", "rw", "x"].map(String::from).to_vec(),
                ));
            }
        };
        Ok(EventName::Breakpoint { addr, len, access })
    }

    /// The location after `uprobe:`/`kprobe:`….
    pub(super) fn probe(&self, kind: ProbeKind, p: Piece<'_>) -> Result<ProbeSpec, SpecError> {
        let user = matches!(kind, ProbeKind::Uprobe | ProbeKind::Uretprobe);
        let (path, loc) = if user {
            let Some(c) = p.s.rfind(':') else {
                return Err(self.error(
                    p.at,
                    p.s,
                    "a uprobe is `uprobe:/path/to/binary:SYMBOL[+OFFSET]` or `uprobe:/path:0xOFFSET`",
                ));
            };
            let path = p.until(c);
            if !path.s.starts_with('/') {
                return Err(self.error(path.at, path.s, "the binary's path must be absolute"));
            }
            (path.s.to_string(), p.from(c + 1))
        } else {
            (String::new(), p)
        };
        if loc.s.is_empty() {
            return Err(self.error(loc.at, loc.s, "missing probe location (symbol or offset)"));
        }
        if loc.s.starts_with(|c: char| c.is_ascii_digit()) {
            return Ok(ProbeSpec {
                kind,
                path,
                symbol: None,
                offset: self.number(loc)?,
            });
        }
        let (symbol, offset) = match loc.s.find('+') {
            Some(plus) => (loc.until(plus), self.number(loc.from(plus + 1))?),
            None => (loc, 0),
        };
        if let Some((i, c)) = symbol
            .s
            .char_indices()
            .find(|(_, c)| !(c.is_ascii_alphanumeric() || "_.$@".contains(*c)))
        {
            return Err(self.error(
                symbol.at + i,
                &c.to_string(),
                "unexpected character in symbol",
            ));
        }
        if symbol.s.is_empty() {
            return Err(self.error(symbol.at, symbol.s, "missing symbol before `+`"));
        }
        Ok(ProbeSpec {
            kind,
            path,
            symbol: Some(symbol.s.to_string()),
            offset,
        })
    }

    /// `pmu/term[=value],…/[modifiers][,qualifiers]`.
    pub(super) fn pmu_form(
        &self,
        all: Piece<'a>,
        slash: usize,
        spec: &mut EventSpec,
    ) -> Result<Option<Piece<'a>>, SpecError> {
        let pmu = all.until(slash);
        if pmu.s.is_empty()
            || !pmu
                .s
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        {
            return Err(self.error(
                pmu.at,
                pmu.s,
                "a PMU name is letters, digits, `_`, `-`, `.`",
            ));
        }
        let body_start = slash + 1;
        let Some(close) = self.text[body_start..].find('/') else {
            return Err(self.error(
                all.s.len(),
                &self.text[slash..],
                "unterminated PMU terms: expected `pmu/term=value,…/`",
            ));
        };
        let body = all.sub(body_start, body_start + close);
        let after = all.from(body_start + close + 1);
        let (mods, rest) = match after.s.find(',') {
            Some(c) => (after.until(c), Some(after.from(c + 1))),
            None => (after, None),
        };
        let mods = match mods.s.strip_prefix(':') {
            Some(_) => mods.from(1),
            None => mods,
        };
        self.modifiers(mods, &mut spec.qualifiers)?;
        if body.s.trim().is_empty() {
            return Err(self.error(body.at, body.s, "no terms between the slashes"));
        }
        let mut terms = Vec::new();
        let mut offset = 0;
        for raw in body.s.split(',') {
            let item = body.sub(offset, offset + raw.len());
            offset += raw.len() + 1;
            let item = item.sub(
                item.s.len() - item.s.trim_start().len(),
                item.s
                    .trim_end()
                    .len()
                    .max(item.s.len() - item.s.trim_start().len()),
            );
            if item.s.is_empty() {
                return Err(self.error(item.at, "", "empty PMU term (stray `,`)"));
            }
            let (name, value) = match item.s.find('=') {
                Some(e) => (item.until(e), Some(item.from(e + 1))),
                None => (item, None),
            };
            if name.s.is_empty()
                || !name
                    .s
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            {
                return Err(self.error(
                    name.at,
                    name.s,
                    "a PMU term name is letters, digits, `_`, `-`, `.`",
                ));
            }
            let value = match value {
                None => TermValue::Flag,
                Some(v) if v.s.is_empty() => {
                    return Err(self.error(v.at, v.s, "missing value after `=`"));
                }
                Some(v) if v.s.starts_with(|c: char| c.is_ascii_digit()) => {
                    TermValue::Number(self.number(v)?)
                }
                Some(v) => TermValue::Str(v.s.to_string()),
            };
            terms.push(Term {
                name: name.s.to_string(),
                value,
            });
        }
        spec.event = EventName::Pmu {
            pmu: pmu.s.to_string(),
            terms,
        };
        Ok(rest)
    }
}
