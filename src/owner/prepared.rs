//! The owner's prepared events: what its backend made of a request,
//! kept for the next allocation of the same request (a loop of allocate
//! and release, a `PerCpu` built again), which then resolves nothing.
//!
//! Only preparations the backend calls reusable are kept (see
//! `PreparedEvent::reusable`): nothing in them is one PMC's, and nothing
//! they were resolved from can change under the same name.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::backend::{EventRequest, PreparedEvent};
use crate::spec::EventSpec;
use crate::{Flags, Mode};

/// How many preparations an owner keeps: the ten events of a `pmcstat`
/// command line fit, and a lookup compares at most this many keys.
const KEPT: usize = 16;

/// Everything of a request a preparation depends on (not its pmcid: a
/// reusable preparation holds none).
#[derive(Debug)]
struct Key {
    spec: EventSpec,
    mode: Mode,
    flags: Flags,
    sample_period: u64,
    buffer_pages: Option<usize>,
    user_stack: Option<u32>,
}

impl Key {
    fn of(request: &EventRequest<'_>) -> Key {
        Key {
            spec: request.spec.clone(),
            mode: request.mode,
            flags: request.flags,
            sample_period: request.sample_period,
            buffer_pages: request.buffer_pages,
            user_stack: request.user_stack,
        }
    }

    fn matches(&self, request: &EventRequest<'_>) -> bool {
        self.mode == request.mode
            && self.flags == request.flags
            && self.sample_period == request.sample_period
            && self.buffer_pages == request.buffer_pages
            && self.user_stack == request.user_stack
            && self.spec == *request.spec
    }
}

/// The kept preparations, oldest first.
#[derive(Debug, Default)]
pub(crate) struct PreparedCache(VecDeque<(Key, Arc<dyn PreparedEvent>)>);

impl PreparedCache {
    /// The preparation kept for `request`, if any.
    pub(crate) fn get(&self, request: &EventRequest<'_>) -> Option<Arc<dyn PreparedEvent>> {
        self.0
            .iter()
            .find(|(key, _)| key.matches(request))
            .map(|(_, event)| Arc::clone(event))
    }

    /// Keeps `event`, prepared for `request`, if its backend says it may
    /// serve again; the oldest goes when the cache is full.
    pub(crate) fn keep(&mut self, request: &EventRequest<'_>, event: &Arc<dyn PreparedEvent>) {
        if !event.reusable() || self.0.iter().any(|(key, _)| key.matches(request)) {
            return;
        }
        if self.0.len() == KEPT {
            self.0.pop_front();
        }
        self.0.push_back((Key::of(request), Arc::clone(event)));
    }
}
