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
    Ok(roff)
}
