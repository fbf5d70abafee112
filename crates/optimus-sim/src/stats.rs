//! Named statistics counters, registered with dotted names and dumped as JSON.
//!
//! Components own plain counter structs and, at the end of a run, write them into a
//! [`Stats`] map under their dotted prefix (`pipeline0.reader.stall_cycles`), in the manner
//! of Ramulator's registered stats. The map is ordered, so dumps are deterministic.

use std::collections::BTreeMap;

/// An ordered map from dotted counter names to values.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Stats(pub BTreeMap<String, f64>);

impl Stats {
    /// Sets counter `prefix.name` to `v`.
    pub fn set(&mut self, prefix: &str, name: &str, v: f64) {
        let key = if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}.{name}")
        };
        self.0.insert(key, v);
    }

    /// The value of a counter, if registered.
    pub fn get(&self, key: &str) -> Option<f64> {
        self.0.get(key).copied()
    }

    /// Adds every counter of `other` under `prefix`.
    pub fn merge(&mut self, prefix: &str, other: &Stats) {
        for (k, v) in &other.0 {
            self.set(prefix, k, *v);
        }
    }
}

/// Implemented by components' counter structs.
pub trait Counters {
    /// Writes every counter into `out` under `prefix`.
    fn dump(&self, prefix: &str, out: &mut Stats);
}

/// Declares a counter struct whose fields are all `u64`, with a `Counters` impl that dumps
/// each field under its own name.
macro_rules! counters {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $field:ident),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct $name { $($(#[$fm])* pub $field: u64,)* }
        impl $crate::stats::Counters for $name {
            fn dump(&self, prefix: &str, out: &mut $crate::stats::Stats) {
                $(out.set(prefix, stringify!($field), self.$field as f64);)*
            }
        }
    };
}
pub(crate) use counters;
