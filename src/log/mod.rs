//! (placeholder: the pmclog format, filled in by its own work item)
