//! A tool's man page: clap_mangen's title, NAME, SYNOPSIS, DESCRIPTION and
//! OPTIONS from the clap definition, then the EXIT STATUS, EXAMPLES and
//! further sections of `pmc_tools::manual`, then VERSION. clap_mangen's
//! own EXTRA section (the `--help` epilogue) is left out: the sections
//! after it say the same in the man page's form.

use pmc_tools::manual::Manual;

pub fn man_page(manual: &Manual) -> std::io::Result<Vec<u8>> {
    let man = clap_mangen::Man::new(manual.command.clone())
        .section("8")
        .manual("System Manager's Manual")
        .source(format!("hwpmc-tools {}", env!("CARGO_PKG_VERSION")));
    let mut roff = Vec::new();
    man.render_title(&mut roff)?;
    man.render_name_section(&mut roff)?;
    man.render_synopsis_section(&mut roff)?;
    man.render_description_section(&mut roff)?;
    man.render_options_section(&mut roff)?;
    roff.extend_from_slice(manual.roff_sections().as_bytes());
    man.render_version_section(&mut roff)?;
    Ok(ascii_roff(&String::from_utf8_lossy(&roff)).into_bytes())
}

/// The page with its non-ASCII characters as groff's named glyphs, which
/// every output device and locale renders (`man` in the C locale warns
/// "can't find special character 'u2026'" for a literal `…`). A character
/// without a glyph here stays, and the test that pages are ASCII names it.
pub fn ascii_roff(roff: &str) -> String {
    let mut out = String::with_capacity(roff.len());
    for c in roff.chars() {
        match c {
            '…' => out.push_str("..."),
            '—' => out.push_str("\\(em"),
            '–' => out.push_str("\\(en"),
            '→' => out.push_str("\\(->"),
            '←' => out.push_str("\\(<-"),
            '×' => out.push_str("\\(mu"),
            '≤' => out.push_str("\\(<="),
            '≥' => out.push_str("\\(>="),
            '≈' => out.push_str("\\(~~"),
            'µ' => out.push_str("\\(mc"),
            '‘' | '’' => out.push_str("\\(aq"),
            '“' => out.push_str("\\(lq"),
            '”' => out.push_str("\\(rq"),
            '\u{a0}' => out.push_str("\\ "),
            c => out.push(c),
        }
    }
    out
}
