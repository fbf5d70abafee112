//! The application core's halves: [`AppDt`] runs record handlers on the records the NIC core
//! decoded (DT on the NIC core), [`AppCoreDt`] decodes, runs and encodes on the app core
//! itself (the baseline DT on the app core). Both are [`Handler`]s that a worker serves.

use std::sync::Arc;

use optimus_core::{Arena, Record};

use super::hand_back::AppTimer;
use super::slots::{parse_token, Kept};
use super::split::{decode_request, merge_reply, on_nic};
use super::{Exchange, Reply, Request};
use crate::frame::Status;
use crate::nic::Handler;
use crate::typed::Failure;

/// Writes a failure's detail into `out` and returns its status.
fn fail(f: Failure, out: &mut Vec<u8>) -> Status {
    out.clear();
    out.extend_from_slice(f.detail.as_bytes());
    f.status
}

/// The workers' half of DT on the NIC core. Clone it for each worker thread.
#[derive(Clone)]
pub struct AppDt {
    ex: Arc<Exchange>,
    /// The calls whose DT the NIC core handed back: decoded, run and encoded here.
    wire: AppCoreDt,
    /// Under the automatic hand-back rule, this core's timings for the NIC core to weigh.
    timer: AppTimer,
}

impl AppDt {
    pub(crate) fn new(ex: Arc<Exchange>) -> Self {
        Self {
            wire: AppCoreDt::new(ex.clone()),
            ex,
            timer: AppTimer::default(),
        }
    }

    /// Runs one call (`wire`: handed back), timed for the automatic hand-back rule when it is
    /// on and the call is one its timer takes.
    fn timed<R>(&mut self, wire: bool, call: impl FnOnce(&mut Self) -> R) -> R {
        let started = self
            .ex
            .timing
            .then(|| self.timer.call_begins(wire))
            .flatten();
        let r = call(self);
        self.timer.call_ends(started, wire);
        r
    }

    fn run(&self, token: &[u8]) -> Result<(), Failure> {
        let ex = &*self.ex;
        let (k, gen) = parse_token(token)
            .ok_or_else(|| Failure::bad_request("not a request the NIC decoded"))?;
        let mut slot = ex
            .slots
            .lock(k)
            .ok_or_else(|| Failure::bad_request("no such exchange slot"))?;
        if slot.gen != gen {
            return Err(Failure::bad_request("the exchange slot moved on"));
        }
        let m = ex.method(slot.method)?;
        let Some(handler) = m.handler.as_ref() else {
            return Err(Failure::new(
                Status::Unavailable,
                format!("no handler for {}/{}", ex.service, m.name),
            ));
        };
        let counters = ex.counting.then_some(&ex.counters);
        slot.with(ex.schema(), |_, v| {
            let placement = v.placement;
            let none = Kept {
                request: v.request,
                nic_request: v.nic_request,
                reply: None,
            };
            let Some(host) = v.request else {
                return (none, Err(Failure::bad_request("the slot holds no request")));
            };
            let req = Request {
                host,
                nic: v.nic_request,
                placement,
                counters,
                nic_wire: v.nic_wire,
                nic_arena: v.raw.then_some((v.nic, &ex.decode)),
                lazy: std::cell::OnceCell::new(),
            };
            let rec = Record::new_in(v.schema, m.output, v.host);
            let reply = Reply {
                rec,
                arena: v.host,
                counters,
            };
            let r = handler(&req, &reply);
            if let Some(c) = counters {
                c.serve(m.input);
                if m.output != m.input {
                    c.serve(m.output);
                }
            }
            // Host reply fields forwarded from NIC-resident request fields read them here.
            let from_nic = m.forward.iter().any(|&(from, to)| {
                !on_nic(placement, m.output, to) && on_nic(placement, m.input, from)
            });
            let nic_rec = if from_nic { req.nic_record() } else { None };
            let r = r.and_then(|()| {
                // The app's pre-serialization: its forwarded host fields copied into the
                // reply record; the NIC merges the rest.
                merge_reply(
                    v.schema,
                    m,
                    rec,
                    (host, nic_rec),
                    (v.host, v.nic),
                    placement,
                    Some(false),
                    false,
                    v.raw,
                )
            });
            let kept = Kept {
                reply: r.is_ok().then_some(rec),
                ..none
            };
            (kept, r)
        })
    }
}

impl Handler for AppDt {
    fn handle(&mut self, _method: u16, request: &[u8], response: &mut Vec<u8>) -> Status {
        match self.timed(false, |dt| dt.run(request)) {
            Ok(()) => Status::Ok,
            Err(f) => fail(f, response),
        }
    }

    fn handle_wire(&mut self, method: u16, request: &[u8], response: &mut Vec<u8>) -> Status {
        self.timed(true, |dt| dt.wire.handle(method, request, response))
    }

    fn turn_begins(&mut self) {
        if self.ex.timing {
            self.timer.turn_begins();
        }
    }

    fn turn_ends(&mut self, _calls: usize) {
        if self.ex.timing {
            self.timer.turn_ends(&self.ex.app_costs);
        }
    }
}

/// DT on the app core: decode, handler, kernels and encode all on the serving thread.
pub struct AppCoreDt {
    ex: Arc<Exchange>,
    arena: Arena,
}

impl Clone for AppCoreDt {
    fn clone(&self) -> Self {
        Self::new(self.ex.clone())
    }
}

impl AppCoreDt {
    pub(crate) fn new(ex: Arc<Exchange>) -> Self {
        Self {
            ex,
            arena: Arena::new(),
        }
    }

    fn run(&mut self, method: u16, wire: &[u8], out: &mut Vec<u8>) -> Result<(), Failure> {
        let ex = &*self.ex;
        let m = ex.method(method)?;
        let Some(handler) = m.handler.as_ref() else {
            return Err(Failure::new(
                Status::Unavailable,
                format!("no handler for {}/{}", ex.service, m.name),
            ));
        };
        self.arena.reset();
        let arena = &self.arena;
        let schema = ex.schema();
        let (host, _) = decode_request(
            schema,
            m,
            wire,
            arena,
            arena,
            None,
            None,
            &ex.decode,
            ex.kernel_limit,
        )?;
        let req = Request {
            host,
            nic: None,
            placement: None,
            counters: None,
            nic_wire: &[],
            nic_arena: None,
            lazy: std::cell::OnceCell::new(),
        };
        let rec = Record::new_in(schema, m.output, arena);
        let reply = Reply {
            rec,
            arena,
            counters: None,
        };
        handler(&req, &reply)?;
        merge_reply(
            schema,
            m,
            rec,
            (host, None),
            (arena, arena),
            None,
            None,
            true,
            false,
        )?;
        optimus_core::engine::encode(rec, out);
        Ok(())
    }
}

impl Handler for AppCoreDt {
    fn handle(&mut self, method: u16, request: &[u8], response: &mut Vec<u8>) -> Status {
        match self.run(method, request, response) {
            Ok(()) => Status::Ok,
            Err(f) => fail(f, response),
        }
    }
}
