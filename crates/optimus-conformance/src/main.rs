//! Testee for Google's protobuf conformance suite (`conformance_test_runner`).
//!
//! Protocol: until EOF on stdin, read a 4-byte little-endian length and a serialized
//! `conformance.ConformanceRequest`; answer with a length and a `ConformanceResponse`. The
//! requests and responses themselves are decoded and encoded by the optimus engine, with the
//! conformance protos compiled at start-up from copies embedded in this binary.
//!
//! The test payloads go through the reflective `Message` codecs, or, with
//! `OPTIMUS_CONFORMANCE_ENGINE=records` in the environment, through engine v2: arena records
//! and the op-table walkers (`optimus_core::engine`), so the suite holds both to Google's.
//! Text-format requests (`text_payload` input, `TEXT_FORMAT` output, `print_unknown_fields`)
//! go through arena records and `optimus_core::text` in both modes ([`text`]).
//!
//! The embedded protos are protobuf 3.21's, the suite Debian's runner runs. A newer suite
//! (v27.2, `scripts/conformance --suite 27`) brings its own `conformance.proto` and
//! `test_messages_proto{2,3}.proto`: with `OPTIMUS_CONFORMANCE_PROTOS=DIR` the testee compiles
//! those three files from `DIR` instead. The editions messages (`edition = "2023"`) protox
//! cannot parse: with `OPTIMUS_CONFORMANCE_DESCRIPTORS=FILE` the testee loads a descriptor set
//! that an editions-aware protoc wrote (`scripts/conformance --editions` writes one of every
//! suite proto, editions ones included) instead of compiling protos at all. A request for a
//! type the schema lacks is answered `skipped` (never `runtime_error`, which the v27 runner
//! takes for a crash), and `scripts/conformance` counts that against the run.
#![forbid(unsafe_code)]

mod text;

use std::io::{self, Read, Write};

use optimus_core::binary::{self, DecodeOptions};
use optimus_core::json::{self, JsonOptions};
use optimus_core::{engine, Arena, Error, Message, Value};
use optimus_schema::{MessageId, SchemaSet};

const PROTOS: &[(&str, &str)] = &[
    (
        "conformance.proto",
        include_str!("../../../testdata/conformance/conformance.proto"),
    ),
    (
        "test_messages_proto2.proto",
        include_str!("../../../testdata/conformance/test_messages_proto2.proto"),
    ),
    (
        "test_messages_proto3.proto",
        include_str!("../../../testdata/conformance/test_messages_proto3.proto"),
    ),
];

// ConformanceRequest / ConformanceResponse field numbers (conformance.proto).
const REQ_PROTOBUF_PAYLOAD: u32 = 1;
const REQ_JSON_PAYLOAD: u32 = 2;
const REQ_OUTPUT_FORMAT: u32 = 3;
const REQ_MESSAGE_TYPE: u32 = 4;
const REQ_TEST_CATEGORY: u32 = 5;
const RESP_PARSE_ERROR: &str = "parse_error";
const RESP_SERIALIZE_ERROR: &str = "serialize_error";
const RESP_PROTOBUF_PAYLOAD: &str = "protobuf_payload";
const RESP_JSON_PAYLOAD: &str = "json_payload";
const RESP_SKIPPED: &str = "skipped";
// WireFormat and TestCategory values.
const FORMAT_PROTOBUF: i32 = 1;
const FORMAT_JSON: i32 = 2;
const CATEGORY_JSON_IGNORE_UNKNOWN: i32 = 3;

struct Testee {
    schema: SchemaSet,
    request: MessageId,
    response: MessageId,
    /// Test payloads through arena records (engine v2) instead of the reflective codecs.
    records: bool,
}

/// The environment variable that picks the engine for the test payloads.
const ENGINE_VAR: &str = "OPTIMUS_CONFORMANCE_ENGINE";
/// The environment variable naming a directory with the suite's own protos.
const PROTOS_VAR: &str = "OPTIMUS_CONFORMANCE_PROTOS";
/// The environment variable naming a descriptor set (`protoc --include_imports -o`) of the
/// suite's protos, editions ones included; it wins over [`PROTOS_VAR`].
const DESCRIPTORS_VAR: &str = "OPTIMUS_CONFORMANCE_DESCRIPTORS";
/// The files of [`PROTOS`], by name, that [`PROTOS_VAR`]'s directory must hold.
const PROTO_FILES: [&str; 3] = [
    "conformance.proto",
    "test_messages_proto2.proto",
    "test_messages_proto3.proto",
];

enum Outcome {
    Payload(&'static str, Value),
    Failure(&'static str, String),
}

impl Testee {
    fn new() -> Result<Testee, String> {
        let schema = match (
            std::env::var_os(DESCRIPTORS_VAR),
            std::env::var_os(PROTOS_VAR),
        ) {
            (Some(set), _) => SchemaSet::from_descriptor_set_file(&set)
                .map_err(|e| format!("{DESCRIPTORS_VAR}={}: {e}", set.to_string_lossy()))?,
            (None, Some(dir)) => {
                let dir = std::path::PathBuf::from(dir);
                let files: Vec<_> = PROTO_FILES.iter().map(|f| dir.join(f)).collect();
                SchemaSet::from_proto_files(&files, &[&dir])
                    .map_err(|e| format!("{PROTOS_VAR}={}: {e}", dir.display()))?
            }
            (None, None) => SchemaSet::from_sources(PROTOS).map_err(|e| e.to_string())?,
        };
        let request = schema
            .message_by_name("conformance.ConformanceRequest")
            .ok_or("no ConformanceRequest")?;
        let response = schema
            .message_by_name("conformance.ConformanceResponse")
            .ok_or("no ConformanceResponse")?;
        let records = match std::env::var(ENGINE_VAR).as_deref() {
            Ok("records") => true,
            Ok("message") | Err(std::env::VarError::NotPresent) => false,
            Ok(other) => {
                return Err(format!(
                    "{ENGINE_VAR}={other:?}: expected records or message"
                ))
            }
            Err(e) => return Err(format!("{ENGINE_VAR}: {e}")),
        };
        Ok(Testee {
            schema,
            request,
            response,
            records,
        })
    }

    fn field<'m>(&self, msg: &'m Message, number: u32) -> Option<&'m Value> {
        let ty = self.schema.message(msg.type_id());
        msg.get(ty.field_index_by_number(number)?)
    }

    fn serve(&self, request_bytes: &[u8]) -> Result<Vec<u8>, Error> {
        let request = binary::decode(
            &self.schema,
            self.request,
            request_bytes,
            &DecodeOptions::default(),
        )?;
        let outcome = self.run(&request);
        let mut response = Message::new(&self.schema, self.response);
        match outcome {
            Outcome::Payload(name, v) => response.set_by_name(&self.schema, name, v)?,
            Outcome::Failure(name, why) => {
                response.set_by_name(&self.schema, name, Value::String(why))?
            }
        }
        Ok(binary::encode(&self.schema, &response))
    }

    fn run(&self, request: &Message) -> Outcome {
        let type_name = match self.field(request, REQ_MESSAGE_TYPE) {
            Some(Value::String(s)) => s.as_str(),
            _ => "",
        };
        if type_name == "conformance.FailureSet" {
            // No expected failures.
            return Outcome::Payload(RESP_PROTOBUF_PAYLOAD, Value::Bytes(Vec::new()));
        }
        let Some(id) = self.schema.message_by_name(type_name) else {
            // The v27 runner takes `runtime_error` for a type the testee cannot load as a
            // crash; `skipped` is the honest answer, and scripts/conformance fails a run with
            // any.
            return Outcome::Failure(RESP_SKIPPED, format!("unknown message type {type_name:?}"));
        };
        let category = match self.field(request, REQ_TEST_CATEGORY) {
            Some(Value::Enum(c)) => *c,
            _ => 0,
        };
        let json_opts = JsonOptions {
            ignore_unknown: category == CATEGORY_JSON_IGNORE_UNKNOWN,
            ..JsonOptions::default()
        };
        let output = match self.field(request, REQ_OUTPUT_FORMAT) {
            Some(Value::Enum(f @ (FORMAT_PROTOBUF | FORMAT_JSON | text::FORMAT_TEXT))) => *f,
            _ => {
                return Outcome::Failure(RESP_SKIPPED, "only protobuf, JSON and text output".into())
            }
        };
        // Text-format input or output goes through arena records in every engine mode.
        if let Some(outcome) = self.run_text(request, id, output, &json_opts) {
            return outcome;
        }
        if self.records {
            return self.run_on_records(request, id, output, &json_opts);
        }
        let parsed = if let Some(Value::Bytes(b)) = self.field(request, REQ_PROTOBUF_PAYLOAD) {
            binary::decode(&self.schema, id, b, &DecodeOptions::default())
        } else if let Some(Value::String(s)) = self.field(request, REQ_JSON_PAYLOAD) {
            json::decode(&self.schema, id, s, &json_opts)
        } else {
            return Outcome::Failure(RESP_SKIPPED, "only protobuf and JSON input".into());
        };
        let msg = match parsed {
            Ok(m) => m,
            Err(e) => return Outcome::Failure(RESP_PARSE_ERROR, e.to_string()),
        };
        if output == FORMAT_PROTOBUF {
            return Outcome::Payload(
                RESP_PROTOBUF_PAYLOAD,
                Value::Bytes(binary::encode(&self.schema, &msg)),
            );
        }
        match json::encode(&self.schema, &msg, &json_opts) {
            Ok(s) => Outcome::Payload(RESP_JSON_PAYLOAD, Value::String(s)),
            Err(e) => Outcome::Failure(RESP_SERIALIZE_ERROR, e.to_string()),
        }
    }

    /// A request with text-format input or output, through [`text::run`] (arena records,
    /// whichever engine the other requests take); `None` for every other request.
    fn run_text(
        &self,
        request: &Message,
        id: MessageId,
        output: i32,
        json_opts: &JsonOptions,
    ) -> Option<Outcome> {
        let input = match self.field(request, text::REQ_TEXT_PAYLOAD) {
            Some(Value::String(s)) => text::Input::Text(s),
            _ if output != text::FORMAT_TEXT => return None,
            _ => match (
                self.field(request, REQ_PROTOBUF_PAYLOAD),
                self.field(request, REQ_JSON_PAYLOAD),
            ) {
                (Some(Value::Bytes(b)), _) => text::Input::Protobuf(b),
                (_, Some(Value::String(s))) => text::Input::Json(s),
                _ => {
                    return Some(Outcome::Failure(
                        RESP_SKIPPED,
                        "only protobuf, JSON and text input".into(),
                    ))
                }
            },
        };
        let print_unknown = matches!(
            self.field(request, text::REQ_PRINT_UNKNOWN_FIELDS),
            Some(Value::Bool(true))
        );
        Some(text::run(
            &self.schema,
            id,
            input,
            output,
            print_unknown,
            json_opts,
        ))
    }

    /// [`Testee::run`]'s payload work on arena records.
    fn run_on_records(
        &self,
        request: &Message,
        id: MessageId,
        output: i32,
        json_opts: &JsonOptions,
    ) -> Outcome {
        let arena = Arena::new();
        let parsed = if let Some(Value::Bytes(b)) = self.field(request, REQ_PROTOBUF_PAYLOAD) {
            engine::decode(&self.schema, id, b, &arena, &DecodeOptions::default())
        } else if let Some(Value::String(s)) = self.field(request, REQ_JSON_PAYLOAD) {
            engine::decode_json(&self.schema, id, s, &arena, json_opts)
        } else {
            return Outcome::Failure(RESP_SKIPPED, "only protobuf and JSON input".into());
        };
        let record = match parsed {
            Ok(r) => r,
            Err(e) => return Outcome::Failure(RESP_PARSE_ERROR, e.to_string()),
        };
        if output == FORMAT_PROTOBUF {
            let mut out = Vec::new();
            engine::encode(record, &mut out);
            return Outcome::Payload(RESP_PROTOBUF_PAYLOAD, Value::Bytes(out));
        }
        let mut text = String::new();
        match engine::encode_json(record, json_opts, &mut text) {
            Ok(()) => Outcome::Payload(RESP_JSON_PAYLOAD, Value::String(text)),
            Err(e) => Outcome::Failure(RESP_SERIALIZE_ERROR, e.to_string()),
        }
    }
}

fn main() {
    let testee = match Testee::new() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("optimus-conformance: {e}");
            std::process::exit(1);
        }
    };
    let mut stdin = io::stdin().lock();
    let mut stdout = io::stdout().lock();
    loop {
        let mut len = [0u8; 4];
        match stdin.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return,
            Err(e) => {
                eprintln!("optimus-conformance: {e}");
                std::process::exit(1);
            }
        }
        let mut request = vec![0u8; u32::from_le_bytes(len) as usize];
        if let Err(e) = stdin.read_exact(&mut request) {
            eprintln!("optimus-conformance: truncated request: {e}");
            std::process::exit(1);
        }
        let response = match testee.serve(&request) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("optimus-conformance: bad request: {e}");
                std::process::exit(1);
            }
        };
        let written = stdout
            .write_all(&(response.len() as u32).to_le_bytes())
            .and_then(|()| stdout.write_all(&response))
            .and_then(|()| stdout.flush());
        if written.is_err() {
            return;
        }
    }
}
