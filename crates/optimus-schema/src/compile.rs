//! Compiles a `FileDescriptorSet` into a [`SchemaSet`]: ids, fields, extensions and layouts.

use std::collections::HashMap;

use prost_types::field_descriptor_proto::Label;
use prost_types::{DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, FileDescriptorSet};

use crate::features::{self, Features, FieldPresence, MessageEncoding, RawMessage, RawSet};
use crate::kind::Kind;
use crate::table::{self, Table};
use crate::types::*;
use crate::SchemaError;

/// Field numbers below this bound are found through a dense table when the type is dense
/// enough; larger numbers use a binary search.
const DENSE_LIMIT: u32 = 1024;

struct PendingMessage<'a> {
    full_name: String,
    syntax: Syntax,
    /// The file's edition (`EDITION_PROTO2`, `EDITION_PROTO3` or `EDITION_2023`).
    edition: i32,
    /// The message's resolved features (file's, then its own).
    features: Features,
    proto: &'a DescriptorProto,
    /// The message's editions options, when the set was decoded from bytes.
    raw: Option<&'a RawMessage>,
    /// Index of the declaring file in the set.
    file: usize,
}

/// What a field needs to know of the message type it holds.
struct TypeFacts<'a> {
    map_entry: bool,
    file: usize,
    full_name: &'a str,
    name: &'a str,
}

/// Where an enum was declared and its resolved features.
type PendingEnum<'a> = (String, Features, &'a EnumDescriptorProto);

/// Builds the schema of every file in `set` (an editions file gets its edition's defaults).
pub(crate) fn compile(set: &FileDescriptorSet) -> Result<SchemaSet, SchemaError> {
    compile_with(set, None)
}

/// Builds the schema of every file in `set`. `raw` is the same set's editions slice (file
/// `i` of one is file `i` of the other), when the set was decoded from bytes; without it,
/// an editions file gets its edition's defaults.
pub(crate) fn compile_with(
    set: &FileDescriptorSet,
    raw: Option<&RawSet>,
) -> Result<SchemaSet, SchemaError> {
    let mut schema = SchemaSet::default();
    let mut pending: Vec<PendingMessage<'_>> = Vec::new();
    let mut pending_enums: Vec<PendingEnum<'_>> = Vec::new();
    let raw_file = |i: usize| raw.and_then(|r| r.file.get(i));

    // Pass 1: give every type an id.
    for (i, file) in set.file.iter().enumerate() {
        let raw = raw_file(i);
        let (edition, file_features) = features::file_features(file, raw)?;
        let package = file.package.clone().unwrap_or_default();
        for (j, e) in file.enum_type.iter().enumerate() {
            let own = raw.and_then(|r| r.enum_type.get(j)?.features());
            pending_enums.push((qualify(&package, e.name()), file_features.merge(own), e));
        }
        for (j, m) in file.message_type.iter().enumerate() {
            let scope = Scope {
                name: &package,
                edition,
                features: file_features,
                file: i,
            };
            let raw = raw.and_then(|r| r.message_type.get(j));
            collect(&scope, m, raw, &mut pending, &mut pending_enums);
        }
    }
    for (i, p) in pending.iter().enumerate() {
        if schema
            .message_names
            .insert(p.full_name.clone(), MessageId(i as u32))
            .is_some()
        {
            return Err(invalid(&p.full_name, "defined twice"));
        }
    }
    for (i, (name, features, e)) in pending_enums.iter().enumerate() {
        schema.enum_names.insert(name.clone(), EnumId(i as u32));
        schema.enums.push(EnumType {
            full_name: name.clone(),
            values: e
                .value
                .iter()
                .map(|v| EnumValue {
                    name: v.name().to_string(),
                    number: v.number(),
                })
                .collect(),
            is_closed: features.enum_type == features::EnumKind::Closed,
        });
    }

    let types: Vec<TypeFacts<'_>> = pending
        .iter()
        .map(|p| TypeFacts {
            map_entry: p.proto.options.as_ref().is_some_and(|o| o.map_entry()),
            file: p.file,
            full_name: &p.full_name,
            name: p.proto.name(),
        })
        .collect();

    // Pass 2: fields of each message.
    let mut fields_of: Vec<Vec<Field>> = Vec::with_capacity(pending.len());
    for p in &pending {
        let mut fields = Vec::with_capacity(p.proto.field.len());
        for (j, f) in p.proto.field.iter().enumerate() {
            let raw_f = p.raw.and_then(|r| r.field.get(j));
            fields.push(field(&schema, p, f, raw_f, false, &types)?);
        }
        fields_of.push(fields);
    }

    // Extensions join their extendee's field table; their features are their scope's.
    let mut extension_sources = Vec::new();
    for (i, file) in set.file.iter().enumerate() {
        let raw = raw_file(i);
        let (edition, file_features) = features::file_features(file, raw)?;
        let package = file.package.clone().unwrap_or_default();
        for (j, x) in file.extension.iter().enumerate() {
            let raw_x = raw.and_then(|r| r.extension.get(j));
            let syntax = file_syntax(edition);
            let source = (package.clone(), syntax, edition, file_features, x, raw_x, i);
            extension_sources.push(source);
        }
    }
    for p in &pending {
        for (j, x) in p.proto.extension.iter().enumerate() {
            let raw_x = p.raw.and_then(|r| r.extension.get(j));
            let source = (
                p.full_name.clone(),
                p.syntax,
                p.edition,
                p.features,
                x,
                raw_x,
                p.file,
            );
            extension_sources.push(source);
        }
    }
    for (scope, syntax, edition, features, x, raw_x, file) in extension_sources {
        let extendee = resolve_message(&schema, x.extendee(), &qualify(&scope, x.name()))?;
        let holder = PendingMessage {
            full_name: scope.clone(),
            syntax,
            edition,
            features,
            proto: pending[extendee.0 as usize].proto,
            raw: None,
            file,
        };
        let mut f = field(&schema, &holder, x, raw_x, true, &types)?;
        f.name = qualify(&scope, x.name());
        f.json_name = format!("[{}]", f.name);
        f.json_key = crate::types::json_member_key(&f.json_name);
        fields_of[extendee.0 as usize].push(f);
    }

    // Pass 3: sort, lay out and index.
    for (p, mut fields) in pending.iter().zip(fields_of) {
        fields.sort_by_key(|f| f.number);
        for w in fields.windows(2) {
            if w[0].number == w[1].number {
                return Err(invalid(
                    &p.full_name,
                    &format!("field number {} used twice", w[0].number),
                ));
            }
        }
        let mut oneofs: Vec<Oneof> = Vec::new();
        let mut oneof_map: HashMap<u32, u32> = HashMap::new();
        for (i, f) in fields.iter_mut().enumerate() {
            f.slot = Slot {
                index: i as u32,
                presence_bit: i as u32,
            };
            if let Some(decl) = f.oneof {
                let next = oneofs.len() as u32;
                let idx = *oneof_map.entry(decl).or_insert_with(|| {
                    oneofs.push(Oneof {
                        name: p.proto.oneof_decl[decl as usize].name().to_string(),
                        fields: Vec::new(),
                    });
                    next
                });
                oneofs[idx as usize].fields.push(i as u32);
                f.oneof = Some(idx);
            }
        }
        let max_number = fields.last().map_or(0, |f| f.number);
        let dense_len = if max_number < DENSE_LIMIT {
            max_number as usize + 1
        } else {
            fields
                .iter()
                .take_while(|f| f.number < DENSE_LIMIT)
                .last()
                .map_or(0, |f| f.number as usize + 1)
        };
        let mut dense = vec![NO_FIELD; dense_len];
        let mut by_name = HashMap::new();
        let mut names_unique = true;
        for (i, f) in fields.iter().enumerate() {
            if (f.number as usize) < dense_len {
                dense[f.number as usize] = i as u32;
            }
            for name in [&f.json_name, &f.name] {
                let earlier = by_name.insert(name.clone(), i as u32);
                names_unique &= earlier.is_none_or(|e| e == i as u32);
            }
        }
        let required_fields = fields
            .iter()
            .enumerate()
            .filter(|(_, f)| f.is_required)
            .map(|(i, _)| i as u32)
            .collect();
        let options = p.proto.options.as_ref();
        let mut ty = MessageType {
            full_name: p.full_name.clone(),
            syntax: p.syntax,
            layout: Layout {
                slot_count: fields.len() as u32,
                presence_words: fields.len().div_ceil(64) as u32,
            },
            fields,
            oneofs,
            is_map_entry: options.is_some_and(|o| o.map_entry()),
            is_message_set: options.is_some_and(|o| o.message_set_wire_format()),
            extension_ranges: p
                .proto
                .extension_range
                .iter()
                .map(|r| (r.start() as u32, r.end() as u32))
                .collect(),
            well_known: WellKnown::from_full_name(&p.full_name),
            required_fields,
            may_lack_required: false,
            dense,
            by_name,
            names_unique,
            table: Table::default(),
            thrift: None,
        };
        let enums = &schema.enums;
        ty.table = table::build(&ty, |e| enums[e as usize].is_closed);
        schema.messages.push(ty);
    }

    mark_required_reachability(&mut schema);
    schema.resolve_sub_types();

    for file in &set.file {
        let package = file.package.clone().unwrap_or_default();
        for s in &file.service {
            let full_name = qualify(&package, s.name());
            let mut methods = Vec::new();
            for m in &s.method {
                let element = format!("{full_name}.{}", m.name());
                methods.push(Method {
                    name: m.name().to_string(),
                    input: resolve_message(&schema, m.input_type(), &element)?,
                    output: resolve_message(&schema, m.output_type(), &element)?,
                    client_streaming: m.client_streaming(),
                    server_streaming: m.server_streaming(),
                });
            }
            schema.services.push(Service { full_name, methods });
        }
    }
    Ok(schema)
}

/// Sets `may_lack_required` on every type from which a required field is reachable through
/// message fields (a fixed point over the type graph, which may have cycles).
fn mark_required_reachability(schema: &mut SchemaSet) {
    for m in &mut schema.messages {
        m.may_lack_required = !m.required_fields.is_empty();
    }
    loop {
        let mut changed = false;
        for i in 0..schema.messages.len() {
            if schema.messages[i].may_lack_required {
                continue;
            }
            let reaches = schema.messages[i]
                .fields
                .iter()
                .filter_map(|f| f.message)
                .any(|id| schema.messages[id.0 as usize].may_lack_required);
            if reaches {
                schema.messages[i].may_lack_required = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

fn file_syntax(edition: i32) -> Syntax {
    match edition {
        features::EDITION_PROTO3 => Syntax::Proto3,
        features::EDITION_PROTO2 => Syntax::Proto2,
        _ => Syntax::Editions,
    }
}

/// What a message inherits from where it is declared.
struct Scope<'s> {
    name: &'s str,
    edition: i32,
    features: Features,
    file: usize,
}

fn collect<'a>(
    scope: &Scope<'_>,
    m: &'a DescriptorProto,
    raw: Option<&'a RawMessage>,
    out: &mut Vec<PendingMessage<'a>>,
    enums: &mut Vec<PendingEnum<'a>>,
) {
    let full_name = qualify(scope.name, m.name());
    let features = scope.features.merge(raw.and_then(RawMessage::features));
    for (j, e) in m.enum_type.iter().enumerate() {
        let own = raw.and_then(|r| r.enum_type.get(j)?.features());
        enums.push((qualify(&full_name, e.name()), features.merge(own), e));
    }
    let inner = Scope {
        name: &full_name,
        edition: scope.edition,
        features,
        file: scope.file,
    };
    for (j, n) in m.nested_type.iter().enumerate() {
        collect(
            &inner,
            n,
            raw.and_then(|r| r.nested_type.get(j)),
            out,
            enums,
        );
    }
    out.push(PendingMessage {
        full_name,
        syntax: file_syntax(scope.edition),
        edition: scope.edition,
        features,
        proto: m,
        raw,
        file: scope.file,
    });
}

fn qualify(scope: &str, name: &str) -> String {
    if scope.is_empty() {
        name.to_string()
    } else {
        format!("{scope}.{name}")
    }
}

fn invalid(element: &str, why: &str) -> SchemaError {
    SchemaError::Invalid {
        element: element.to_string(),
        why: why.to_string(),
    }
}

fn resolve_message(
    schema: &SchemaSet,
    name: &str,
    element: &str,
) -> Result<MessageId, SchemaError> {
    schema
        .message_by_name(name)
        .ok_or_else(|| invalid(element, &format!("unknown message type {name}")))
}

fn field(
    schema: &SchemaSet,
    owner: &PendingMessage<'_>,
    f: &FieldDescriptorProto,
    raw: Option<&features::RawField>,
    is_extension: bool,
    types: &[TypeFacts<'_>],
) -> Result<Field, SchemaError> {
    let element = qualify(&owner.full_name, f.name());
    // A oneof member inherits from its oneof, which inherits from the message.
    let parent = match (f.oneof_index, owner.raw) {
        (Some(i), Some(r)) if !is_extension => {
            let oneof = r.oneof_decl.get(i as usize).and_then(|o| o.features());
            owner.features.merge(oneof)
        }
        _ => owner.features,
    };
    let features = parent.for_field(owner.edition, f, raw);
    let kind = Kind::from_descriptor(f.r#type.unwrap_or(0))
        .or_else(|| {
            // Descriptors from some producers leave `type` unset for message/enum references.
            f.type_name.as_deref().map(|n| {
                if schema.enum_by_name(n).is_some() {
                    Kind::Enum
                } else {
                    Kind::Message
                }
            })
        })
        .ok_or_else(|| invalid(&element, "field has no type"))?;
    let number = u32::try_from(f.number())
        .ok()
        .filter(|&n| (1..=536_870_911).contains(&n))
        .ok_or_else(|| invalid(&element, "field number out of range"))?;
    let (message, enum_type) = match kind {
        Kind::Message | Kind::Group => (
            Some(resolve_message(schema, f.type_name(), &element)?),
            None,
        ),
        Kind::Enum => (
            None,
            Some(
                schema
                    .enum_by_name(f.type_name())
                    .ok_or_else(|| invalid(&element, "unknown enum type"))?,
            ),
        ),
        _ => (None, None),
    };
    let repeated = f.label() == Label::Repeated;
    let is_map = repeated
        && kind == Kind::Message
        && message.is_some_and(|id| types[id.0 as usize].map_entry);
    // A delimited message field is written as a group (never a map or a map entry's value).
    let in_map_entry = owner.proto.options.as_ref().is_some_and(|o| o.map_entry());
    let kind = if kind == Kind::Message
        && features.message_encoding == MessageEncoding::Delimited
        && (is_extension || !in_map_entry)
        && !message.is_some_and(|id| types[id.0 as usize].map_entry)
    {
        Kind::Group
    } else {
        kind
    };
    // C++'s `IsGroupLike`: a group whose field is named for its type, declared beside it.
    let is_group_like = kind == Kind::Group
        && message.is_some_and(|id| {
            let ty = &types[id.0 as usize];
            let scope = ty.full_name.rsplit_once('.').map_or("", |(s, _)| s);
            f.name() == ty.name.to_ascii_lowercase()
                && ty.file == owner.file
                && scope == owner.full_name
        });
    let in_real_oneof = f.oneof_index.is_some() && !f.proto3_optional();
    let cardinality = if is_map {
        Cardinality::Map
    } else if repeated {
        Cardinality::Repeated
    } else if features.field_presence != FieldPresence::Implicit
        || kind.is_message()
        || f.oneof_index.is_some()
        || f.proto3_optional()
        || is_extension
    {
        Cardinality::Optional
    } else {
        Cardinality::Singular
    };
    let is_packed = cardinality == Cardinality::Repeated
        && kind.is_packable()
        && features.repeated_field_encoding == features::RepeatedEncoding::Packed;
    let default = match f.default_value.as_deref() {
        Some(text) => Some(parse_default(schema, kind, enum_type, text, &element)?),
        None => None,
    };
    let json_name = match f.json_name.as_deref() {
        Some(j) if !j.is_empty() => j.to_string(),
        _ => lower_camel(f.name()),
    };
    Ok(Field {
        number,
        name: f.name().to_string(),
        json_key: crate::types::json_member_key(&json_name),
        json_name,
        kind,
        cardinality,
        is_packed,
        is_required: features.field_presence == FieldPresence::LegacyRequired
            && cardinality == Cardinality::Optional,
        oneof: if in_real_oneof {
            f.oneof_index.map(|i| i as u32)
        } else {
            None
        },
        message,
        enum_type,
        default,
        is_extension,
        slot: Slot {
            index: 0,
            presence_bit: 0,
        },
        tag: (number << 3) | kind.wire_type() as u32,
        features,
        is_group_like,
    })
}

/// protoc's default JSON name: underscores dropped, the letter after each capitalized.
pub(crate) fn lower_camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper_next = false;
    for c in name.chars() {
        if c == '_' {
            upper_next = true;
        } else if upper_next {
            out.push(c.to_ascii_uppercase());
            upper_next = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn parse_default(
    schema: &SchemaSet,
    kind: Kind,
    enum_type: Option<EnumId>,
    text: &str,
    element: &str,
) -> Result<DefaultValue, SchemaError> {
    let bad = || invalid(element, &format!("bad default value {text:?}"));
    Ok(match kind {
        Kind::Bool => DefaultValue::Bool(match text {
            "true" => true,
            "false" => false,
            _ => return Err(bad()),
        }),
        Kind::Int32
        | Kind::Int64
        | Kind::Sint32
        | Kind::Sint64
        | Kind::Sfixed32
        | Kind::Sfixed64 => DefaultValue::I64(text.parse().map_err(|_| bad())?),
        Kind::Uint32 | Kind::Uint64 | Kind::Fixed32 | Kind::Fixed64 => {
            DefaultValue::U64(text.parse().map_err(|_| bad())?)
        }
        Kind::Float | Kind::Double => DefaultValue::F64(match text {
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            "nan" | "-nan" => f64::NAN,
            _ => text.parse().map_err(|_| bad())?,
        }),
        Kind::String => DefaultValue::String(text.to_string()),
        Kind::Bytes => DefaultValue::Bytes(unescape_c(text).ok_or_else(bad)?),
        Kind::Enum => {
            let e = schema.enum_type(enum_type.ok_or_else(bad)?);
            DefaultValue::Enum(e.value_by_name(text).ok_or_else(bad)?.number)
        }
        Kind::Message | Kind::Group => return Err(bad()),
    })
}

/// Undoes protoc's C escaping of a bytes default (`\n`, `\\`, `\"`, `\NNN` octal, `\xHH`).
fn unescape_c(text: &str) -> Option<Vec<u8>> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = *b.get(i + 1)?;
        i += 2;
        match c {
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'v' => out.push(11),
            b'\\' | b'\'' | b'"' | b'?' => out.push(c),
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                let mut n = 1;
                while n < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                    v = v * 8 + u32::from(b[i] - b'0');
                    i += 1;
                    n += 1;
                }
                out.push(u8::try_from(v).ok()?);
            }
            b'x' | b'X' => {
                let mut v = 0u32;
                let start = i;
                while i < b.len() && i - start < 2 && b[i].is_ascii_hexdigit() {
                    v = v * 16 + (b[i] as char).to_digit(16)?;
                    i += 1;
                }
                if i == start {
                    return None;
                }
                out.push(v as u8);
            }
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_names() {
        assert_eq!(lower_camel("optional_int32"), "optionalInt32");
        assert_eq!(lower_camel("field__name"), "fieldName");
        assert_eq!(lower_camel("_field_name3"), "FieldName3");
        assert_eq!(lower_camel("FIELD_NAME11"), "FIELDNAME11");
    }

    #[test]
    fn c_unescape() {
        assert_eq!(
            unescape_c(r#"a\nb\\\"\001\xff"#).unwrap(),
            b"a\nb\\\"\x01\xff"
        );
        assert_eq!(unescape_c(r"\377").unwrap(), vec![255]);
        assert!(unescape_c("\\").is_none());
        assert!(unescape_c(r"\400").is_none());
    }
}
