//! A guess kept per process, by name: what a caller's last request found,
//! so its next one can start on it while the store says whether it still
//! holds. Whoever guesses checks the guess before acting on it.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// At most [`Hint::KEPT`] names, then the guesses start again.
pub struct Hint<V>(Mutex<Option<HashMap<String, V>>>);

impl<V: Clone> Hint<V> {
    const KEPT: usize = 10_000;

    pub const fn new() -> Self {
        Hint(Mutex::new(None))
    }

    pub fn get(&self, name: &str) -> Option<V> {
        let held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        held.as_ref()?.get(name).cloned()
    }

    pub fn keep(&self, name: &str, value: V) {
        let mut held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let map = held.get_or_insert_with(Default::default);
        if map.len() >= Self::KEPT && !map.contains_key(name) {
            map.clear();
        }
        map.insert(name.to_string(), value);
    }

    pub fn forget(&self, name: &str) {
        let mut held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(map) = held.as_mut() {
            map.remove(name);
        }
    }
}

impl<V: Clone> Default for Hint<V> {
    fn default() -> Self {
        Self::new()
    }
}
