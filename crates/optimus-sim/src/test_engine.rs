//! The engine as a trace source for the model's tests (the `optimus` CLI has its own): compiles
//! the `.proto` with `optimus-schema` and records `optimus-core`'s traced codec.

use optimus_core::binary::{self, DecodeOptions};
use optimus_schema::SchemaSet;
use optimus_sim::workload::TraceSource;
use optimus_trace::{Direction, Event, Recorder};

/// Traces with the real engine.
pub struct Engine;

impl TraceSource for Engine {
    fn trace(
        &mut self,
        proto: &str,
        messages: &[(&str, &[u8])],
        direction: Direction,
    ) -> Result<Vec<Event>, String> {
        let schema = SchemaSet::from_source(proto).map_err(|e| e.to_string())?;
        let opts = DecodeOptions::default();
        let mut rec = Recorder::new();
        for (ty, bytes) in messages {
            let id = schema
                .message_by_name(ty)
                .ok_or_else(|| format!("no message type {ty}"))?;
            binary::trace_message(&schema, id, bytes, direction, &opts, &mut rec)
                .map_err(|e| e.to_string())?;
        }
        Ok(rec.events)
    }
}
