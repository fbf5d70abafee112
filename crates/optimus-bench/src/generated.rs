//! optimus through the typed views optimus-build generates for the embedded workloads: the
//! same engine reached through `Flat`, `Mixed` and `Nested` instead of a runtime-loaded
//! schema, so the rows show what the runtime schema costs over generated code.

use std::hint::black_box;

use anyhow::Result;
use optimus_core::engine::Encoder;
use optimus_core::Arena;

use super::{Op, Runner, Workload};

#[allow(dead_code)]
mod bench {
    include!(concat!(env!("OUT_DIR"), "/bench.rs"));
}

/// The runner of `op` through the generated type of workload `w`: binary encode (a record
/// decoded once into `held`, written into a reused encoder's buffer), binary decode and JSON decode
/// into an arena reset before each message. `None` for a workload without generated types
/// (`--proto`) and for JSON encode, whose generated form returns a new `String`.
pub(crate) fn runner<'a>(
    op: Op,
    w: &'a Workload,
    json_text: &'a str,
    held: &'a Arena,
) -> Result<Option<Runner<'a>>> {
    macro_rules! typed {
        ($ty:ident) => {{
            let call: Box<dyn FnMut() -> Result<()> + 'a> = match op {
                Op::Encode => {
                    let msg = bench::$ty::decode(&w.bytes, held)?;
                    let mut encoder = Encoder::new();
                    Box::new(move || {
                        black_box(black_box(msg).encode_with(&mut encoder));
                        Ok(())
                    })
                }
                Op::Decode | Op::DecodeReuse => {
                    let mut arena = Arena::new();
                    Box::new(move || {
                        arena.reset();
                        black_box(bench::$ty::decode(black_box(&w.bytes), &arena)?);
                        Ok(())
                    })
                }
                Op::JsonDecode => {
                    let mut arena = Arena::new();
                    Box::new(move || {
                        arena.reset();
                        black_box(bench::$ty::decode_json(black_box(json_text), &arena)?);
                        Ok(())
                    })
                }
                Op::JsonEncode | Op::Transcode => return Ok(None),
            };
            Ok(Some(Runner {
                implementation: "optimus-generated",
                call,
            }))
        }};
    }
    match w.type_name.as_str() {
        "bench.Flat" => typed!(Flat),
        "bench.Mixed" => typed!(Mixed),
        "bench.Nested" => typed!(Nested),
        _ => Ok(None),
    }
}
