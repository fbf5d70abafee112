//! The text-format requests: `text_payload` input or `TEXT_FORMAT` output
//! (`optimus_core::text`). They go through engine v2's arena records in every engine mode
//! (`OPTIMUS_CONFORMANCE_ENGINE=message` too): the text codec exists only on records, and
//! its binary and JSON sides are the records' own walkers.

use optimus_core::binary::DecodeOptions;
use optimus_core::json::JsonOptions;
use optimus_core::text::{self, TextOptions};
use optimus_core::{engine, Arena, Value};
use optimus_schema::{MessageId, SchemaSet};

use crate::{Outcome, RESP_JSON_PAYLOAD, RESP_PARSE_ERROR, RESP_PROTOBUF_PAYLOAD};
use crate::{FORMAT_JSON, FORMAT_PROTOBUF, RESP_SERIALIZE_ERROR, RESP_SKIPPED};

/// `ConformanceRequest.text_payload`.
pub(crate) const REQ_TEXT_PAYLOAD: u32 = 8;
/// `ConformanceRequest.print_unknown_fields`.
pub(crate) const REQ_PRINT_UNKNOWN_FIELDS: u32 = 9;
/// `WireFormat.TEXT_FORMAT`.
pub(crate) const FORMAT_TEXT: i32 = 4;
const RESP_TEXT_PAYLOAD: &str = "text_payload";

/// A request's payload, in whichever format it came.
pub(crate) enum Input<'r> {
    Protobuf(&'r [u8]),
    Json(&'r str),
    Text(&'r str),
}

/// Reads `input` as type `id` into a record and writes it in `output` format.
pub(crate) fn run(
    schema: &SchemaSet,
    id: MessageId,
    input: Input<'_>,
    output: i32,
    print_unknown: bool,
    json_opts: &JsonOptions,
) -> Outcome {
    let arena = Arena::new();
    let text_opts = TextOptions {
        print_unknown,
        ..TextOptions::default()
    };
    let parsed = match input {
        Input::Protobuf(b) => engine::decode(schema, id, b, &arena, &DecodeOptions::default()),
        Input::Json(s) => engine::decode_json(schema, id, s, &arena, json_opts),
        Input::Text(s) => text::decode(schema, id, s, &arena, &text_opts),
    };
    let record = match parsed {
        Ok(r) => r,
        Err(e) => return Outcome::Failure(RESP_PARSE_ERROR, e.to_string()),
    };
    let mut out = String::new();
    match output {
        FORMAT_PROTOBUF => {
            let mut bytes = Vec::new();
            engine::encode(record, &mut bytes);
            Outcome::Payload(RESP_PROTOBUF_PAYLOAD, Value::Bytes(bytes))
        }
        FORMAT_JSON => match engine::encode_json(record, json_opts, &mut out) {
            Ok(()) => Outcome::Payload(RESP_JSON_PAYLOAD, Value::String(out)),
            Err(e) => Outcome::Failure(RESP_SERIALIZE_ERROR, e.to_string()),
        },
        FORMAT_TEXT => match text::encode(record, &text_opts, &mut out) {
            Ok(()) => Outcome::Payload(RESP_TEXT_PAYLOAD, Value::String(out)),
            Err(e) => Outcome::Failure(RESP_SERIALIZE_ERROR, e.to_string()),
        },
        _ => Outcome::Failure(RESP_SKIPPED, "only protobuf, JSON and text output".into()),
    }
}
