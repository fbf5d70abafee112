//! `optimus schema`: print the compiled types, their fields and record layouts.

use std::fmt::Write as _;
use std::io::{self, Write};

use anyhow::Result;
use clap::Args;
use optimus_schema::{Cardinality, Field, MessageType, SchemaSet};

use crate::source::{find_type, SchemaSource};

/// Arguments of `optimus schema`.
#[derive(Args, Debug)]
pub struct SchemaArgs {
    #[command(flatten)]
    source: SchemaSource,
    /// Show only this message type (fully qualified name); default: every type.
    #[arg(long = "type", value_name = "NAME")]
    type_name: Option<String>,
}

/// Runs `optimus schema`.
pub fn run(args: SchemaArgs) -> Result<()> {
    let schema = args.source.load()?;
    let mut text = String::new();
    match &args.type_name {
        Some(name) => {
            let id = find_type(&schema, name)?;
            describe(&schema, schema.message(id), &mut text);
        }
        None => {
            for (_, m) in schema.messages() {
                if !m.full_name.starts_with("google.protobuf.") {
                    describe(&schema, m, &mut text);
                }
            }
            for (_, e) in schema.enums() {
                if e.full_name.starts_with("google.protobuf.") {
                    continue;
                }
                let _ = writeln!(
                    text,
                    "enum {} ({})",
                    e.full_name,
                    if e.is_closed { "closed" } else { "open" }
                );
                for v in &e.values {
                    let _ = writeln!(text, "  {} = {}", v.name, v.number);
                }
            }
            for s in schema.services() {
                let _ = writeln!(text, "service {}", s.full_name);
                for (i, m) in s.methods.iter().enumerate() {
                    let _ = writeln!(
                        text,
                        "  [{i}] {}({}) returns ({})",
                        m.name,
                        schema.message(m.input).full_name,
                        schema.message(m.output).full_name
                    );
                }
            }
        }
    }
    io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

fn describe(schema: &SchemaSet, m: &MessageType, out: &mut String) {
    let _ = writeln!(
        out,
        "message {} ({:?}{}) layout: {} slots, {} presence words",
        m.full_name,
        m.syntax,
        if m.is_map_entry { ", map entry" } else { "" },
        m.layout.slot_count,
        m.layout.presence_words
    );
    for f in &m.fields {
        let _ = writeln!(
            out,
            "  {:>5}  {:<32} {:<28} json={:<24} slot={} bit={}{}",
            f.number,
            f.name,
            type_of(schema, f),
            f.json_name,
            f.slot.index,
            f.slot.presence_bit,
            flags(m, f)
        );
    }
}

fn type_of(schema: &SchemaSet, f: &Field) -> String {
    let base = match (f.message, f.enum_type) {
        (Some(id), _) => schema.message(id).full_name.clone(),
        (_, Some(id)) => schema.enum_type(id).full_name.clone(),
        _ => f.kind.proto_name().to_string(),
    };
    match f.cardinality {
        Cardinality::Map => {
            let (k, v) = schema.map_entry_fields(f);
            format!("map<{}, {}>", type_of(schema, k), type_of(schema, v))
        }
        Cardinality::Repeated => format!("repeated {base}"),
        Cardinality::Optional => format!("optional {base}"),
        Cardinality::Singular => base,
    }
}

fn flags(m: &MessageType, f: &Field) -> String {
    let mut s = String::new();
    if f.is_packed {
        s.push_str(" packed");
    }
    if f.is_required {
        s.push_str(" required");
    }
    if f.is_extension {
        s.push_str(" extension");
    }
    if let Some(o) = f.oneof {
        let _ = write!(s, " oneof={}", m.oneofs[o as usize].name);
    }
    if let Some(d) = &f.default {
        let _ = write!(s, " default={d:?}");
    }
    s
}
