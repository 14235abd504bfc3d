//! The event specifier parser. (Filled in by the spec parser work.)

use super::{EventSpec, SpecError};

/// Parses an event specifier.
pub fn parse(spec: &str) -> Result<EventSpec, SpecError> {
    Err(SpecError {
        column: 1,
        token: spec.to_string(),
        message: "parser not written yet".into(),
        alternatives: Vec::new(),
    })
}
