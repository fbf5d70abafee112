//! Google's conformance testee on generated types: the runner's requests are read and its
//! responses written through the types generated from `conformance.proto`, and the test
//! payloads decoded and encoded as the generated `TestAllTypesProto2`/`TestAllTypesProto3`
//! (`scripts/conformance --testee target/release/conformance-generated`); text format reads
//! and writes the generated message's own record (`optimus_core::text`). Each payload also
//! goes through the dynamic path — records of a schema loaded separately from the same
//! descriptors — and a response that differs from the generated one in any byte (or error
//! text) is answered as a runtime error, so the suite fails.

use std::io::{self, Read, Write};
use std::sync::OnceLock;

use optimus_build::{Arena, EnumValue, Error, GeneratedMessage, JsonOptions, SchemaSet};
use optimus_build_tests::conformance::{proto2, proto3};
use optimus_build_tests::protocol::conformance_request::Payload;
use optimus_build_tests::protocol::{
    ConformanceRequest, ConformanceResponse, TestCategory, WireFormat,
};
use optimus_core::engine;
use optimus_core::schema::FileDescriptorSet;
use optimus_core::text::{self, TextOptions};
use prost::Message as _;

/// The dynamic path's schema: the conformance messages loaded apart from the generated
/// modules' own.
fn dynamic_schema() -> &'static SchemaSet {
    static SCHEMA: OnceLock<SchemaSet> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let set = |bytes: &[u8]| FileDescriptorSet::decode(bytes).expect("a descriptor set");
        let mut all = set(proto2::DESCRIPTOR_SET);
        all.file.extend(set(proto3::DESCRIPTOR_SET).file);
        let mut seen = std::collections::HashSet::new();
        all.file.retain(|f| seen.insert(f.name.clone()));
        SchemaSet::from_descriptor_set(&all).expect("the conformance descriptors load")
    })
}

/// What the dynamic path answers for `payload` as type `name`: the output bytes or text, or
/// the error's text.
fn dynamic(
    name: &str,
    payload: Option<Payload<'_>>,
    format: EnumValue<WireFormat>,
    json_opts: &JsonOptions,
    text_opts: &TextOptions,
) -> Option<Result<Vec<u8>, String>> {
    let schema = dynamic_schema();
    let id = schema.message_by_name(name)?;
    let arena = Arena::new();
    let parsed = match payload? {
        Payload::ProtobufPayload(b) => engine::decode(schema, id, b, &arena, &Default::default()),
        Payload::JsonPayload(t) => engine::decode_json(schema, id, t, &arena, json_opts),
        Payload::TextPayload(t) => text::decode(schema, id, t, &arena, text_opts),
        _ => return None,
    };
    let rec = match parsed {
        Ok(r) => r,
        Err(e) => return Some(Err(e.to_string())),
    };
    Some(match format {
        EnumValue::Known(WireFormat::Protobuf) => {
            let mut out = Vec::new();
            engine::encode(rec, &mut out);
            Ok(out)
        }
        EnumValue::Known(WireFormat::Json) => {
            let mut text = String::new();
            engine::encode_json(rec, json_opts, &mut text)
                .map(|()| text.into_bytes())
                .map_err(|e| e.to_string())
        }
        EnumValue::Known(WireFormat::TextFormat) => {
            let mut out = String::new();
            text::encode(rec, text_opts, &mut out)
                .map(|()| out.into_bytes())
                .map_err(|e| e.to_string())
        }
        _ => return None,
    })
}

fn serve(request: &[u8]) -> Result<Vec<u8>, Error> {
    let arena = Arena::new();
    let req = ConformanceRequest::decode(request, &arena)?;
    let resp = ConformanceResponse::new_in(&arena);
    let json_opts = JsonOptions {
        ignore_unknown: req.test_category()
            == EnumValue::Known(TestCategory::JsonIgnoreUnknownParsingTest),
        ..JsonOptions::default()
    };
    let text_opts = TextOptions {
        print_unknown: req.print_unknown_fields(),
        ..TextOptions::default()
    };
    match req.message_type() {
        "conformance.FailureSet" => resp.set_protobuf_payload(b""),
        proto3::TestAllTypesProto3::FULL_NAME => {
            round_trip::<proto3::TestAllTypesProto3>(req, resp, &arena, &json_opts, &text_opts)
        }
        proto2::TestAllTypesProto2::FULL_NAME => {
            round_trip::<proto2::TestAllTypesProto2>(req, resp, &arena, &json_opts, &text_opts)
        }
        other => resp.set_skipped(arena.alloc_str(&format!("unknown message type {other:?}"))),
    }
    Ok(resp.encode_to_vec())
}

fn round_trip<'a, M: GeneratedMessage<'a>>(
    req: ConformanceRequest<'a>,
    resp: ConformanceResponse<'a>,
    arena: &'a Arena,
    json_opts: &JsonOptions,
    text_opts: &TextOptions,
) {
    let parsed = match req.payload() {
        Some(Payload::ProtobufPayload(bytes)) => M::decode(bytes, arena),
        Some(Payload::JsonPayload(text)) => M::decode_json_with(text, arena, json_opts),
        Some(Payload::TextPayload(input)) => {
            text::decode(M::schema(), M::type_id(), input, arena, text_opts)
                .and_then(|rec| M::from_record(rec, arena))
        }
        _ => return resp.set_skipped("only protobuf, JSON and text input"),
    };
    let format = req.requested_output_format();
    let want = dynamic(M::FULL_NAME, req.payload(), format, json_opts, text_opts);
    let differs = |got: Result<&[u8], String>| match &want {
        Some(w) if w.as_deref().map_err(String::clone) != got => {
            let why = format!("generated {got:?}, dynamic {w:?}");
            resp.set_runtime_error(arena.alloc_str(&why));
            true
        }
        _ => false,
    };
    let msg = match parsed {
        Ok(m) => m,
        Err(e) => {
            if !differs(Err(e.to_string())) {
                resp.set_parse_error(arena.alloc_str(&e.to_string()));
            }
            return;
        }
    };
    match format {
        EnumValue::Known(WireFormat::Protobuf) => {
            let bytes = msg.encode_to_vec();
            if !differs(Ok(&bytes)) {
                resp.set_protobuf_payload(arena.alloc_bytes(&bytes));
            }
        }
        EnumValue::Known(WireFormat::Json) => match msg.encode_json_with(json_opts) {
            Ok(text) if !differs(Ok(text.as_bytes())) => {
                resp.set_json_payload(arena.alloc_str(&text))
            }
            Ok(_) => {}
            Err(e) if !differs(Err(e.to_string())) => {
                resp.set_serialize_error(arena.alloc_str(&e.to_string()))
            }
            Err(_) => {}
        },
        EnumValue::Known(WireFormat::TextFormat) => {
            let mut out = String::new();
            match text::encode(msg.as_record(), text_opts, &mut out) {
                Ok(()) if !differs(Ok(out.as_bytes())) => {
                    resp.set_text_payload(arena.alloc_str(&out))
                }
                Ok(()) => {}
                Err(e) if !differs(Err(e.to_string())) => {
                    resp.set_serialize_error(arena.alloc_str(&e.to_string()))
                }
                Err(_) => {}
            }
        }
        _ => resp.set_skipped("only protobuf, JSON and text output"),
    }
}

fn main() {
    let mut stdin = io::stdin().lock();
    let mut stdout = io::stdout().lock();
    loop {
        let mut len = [0u8; 4];
        match stdin.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return,
            Err(e) => {
                eprintln!("conformance-generated: {e}");
                std::process::exit(1);
            }
        }
        let mut request = vec![0u8; u32::from_le_bytes(len) as usize];
        if let Err(e) = stdin.read_exact(&mut request) {
            eprintln!("conformance-generated: truncated request: {e}");
            std::process::exit(1);
        }
        let response = match serve(&request) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("conformance-generated: bad request: {e}");
                std::process::exit(1);
            }
        };
        let written = stdout
            .write_all(&(response.len() as u32).to_le_bytes())
            .and_then(|()| stdout.write_all(&response))
            .and_then(|()| stdout.flush());
        if let Err(e) = written {
            eprintln!("conformance-generated: {e}");
            std::process::exit(1);
        }
    }
}
