//! The process-wide defaults: the default owner and the libpmc-style
//! calls on it.

mod allocate;
