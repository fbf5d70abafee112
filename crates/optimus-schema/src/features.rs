//! Protobuf editions: the features (`google.protobuf.FeatureSet`) of every file, message,
//! oneof, field and enum resolved into one [`Features`] per field and enum, which the
//! compiler reads whatever the file's syntax.
//!
//! Editions files (`edition = "2023"`) carry `features` options on file, message, oneof,
//! field and enum, each inherited downward from the edition's defaults. proto2 and proto3
//! files map onto the same resolved set (protoc's "legacy" features: proto2 is explicit
//! presence, closed enums, expanded repeated fields and no UTF-8 check; proto3 is implicit
//! presence, open enums, packed repeated fields and UTF-8 verification), with `required`,
//! `group` and `[packed = ...]` inferred as protoc infers them, so one code path compiles all
//! three.
//!
//! prost-types 0.14 does not carry `FileDescriptorProto.edition` (14) or any options'
//! `features`, and prost drops unknown fields, so [`RawSet`] decodes just those (and the tree
//! that leads to them) from the same serialized `FileDescriptorSet`, walked in parallel with
//! prost-types' structures by index.

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{FieldDescriptorProto, FileDescriptorProto};

use crate::SchemaError;

/// `Edition.EDITION_PROTO2`.
pub(crate) const EDITION_PROTO2: i32 = 998;
/// `Edition.EDITION_PROTO3`.
pub(crate) const EDITION_PROTO3: i32 = 999;
/// `Edition.EDITION_2023`.
pub(crate) const EDITION_2023: i32 = 1000;

/// How a singular field tracks presence (`FeatureSet.field_presence`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldPresence {
    /// A set field is written even when it holds its default (proto2 `optional`).
    Explicit,
    /// No presence: the default value is not written (proto3 singular scalars).
    Implicit,
    /// proto2 `required`: explicit presence, and a message lacking it is incomplete.
    LegacyRequired,
}

/// Whether an enum accepts numbers it does not declare (`FeatureSet.enum_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnumKind {
    /// Any number is a value (proto3).
    Open,
    /// Undeclared numbers are kept as unknown fields (proto2).
    Closed,
}

/// How repeated scalars are written (`FeatureSet.repeated_field_encoding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepeatedEncoding {
    /// One length-delimited run (proto3's default).
    Packed,
    /// One tag per value (proto2's default).
    Expanded,
}

/// Whether string fields are checked to be UTF-8 (`FeatureSet.utf8_validation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Utf8Validation {
    /// Invalid UTF-8 fails parsing (proto3).
    Verify,
    /// No check (proto2).
    None,
}

/// How message fields are written (`FeatureSet.message_encoding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageEncoding {
    /// A length-delimited sub-message.
    LengthPrefixed,
    /// Between start- and end-group tags: proto2's group wire form.
    Delimited,
}

/// Whether the type must support JSON (`FeatureSet.json_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonFormat {
    /// Full JSON support: JSON name conflicts are errors (proto3).
    Allow,
    /// JSON on a best-effort basis: JSON name conflicts are tolerated (proto2).
    LegacyBestEffort,
}

/// A resolved feature set: every feature of edition 2023, with a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// `field_presence`.
    pub field_presence: FieldPresence,
    /// `enum_type`.
    pub enum_type: EnumKind,
    /// `repeated_field_encoding`.
    pub repeated_field_encoding: RepeatedEncoding,
    /// `utf8_validation`.
    pub utf8_validation: Utf8Validation,
    /// `message_encoding`.
    pub message_encoding: MessageEncoding,
    /// `json_format`.
    pub json_format: JsonFormat,
}

impl Features {
    /// proto2's behaviour (`EDITION_PROTO2`'s defaults).
    pub const PROTO2: Features = Features {
        field_presence: FieldPresence::Explicit,
        enum_type: EnumKind::Closed,
        repeated_field_encoding: RepeatedEncoding::Expanded,
        utf8_validation: Utf8Validation::None,
        message_encoding: MessageEncoding::LengthPrefixed,
        json_format: JsonFormat::LegacyBestEffort,
    };

    /// proto3's behaviour (`EDITION_PROTO3`'s defaults).
    pub const PROTO3: Features = Features {
        field_presence: FieldPresence::Implicit,
        enum_type: EnumKind::Open,
        repeated_field_encoding: RepeatedEncoding::Packed,
        utf8_validation: Utf8Validation::Verify,
        message_encoding: MessageEncoding::LengthPrefixed,
        json_format: JsonFormat::Allow,
    };

    /// Edition 2023's defaults.
    pub const EDITION_2023: Features = Features {
        field_presence: FieldPresence::Explicit,
        enum_type: EnumKind::Open,
        repeated_field_encoding: RepeatedEncoding::Packed,
        utf8_validation: Utf8Validation::Verify,
        message_encoding: MessageEncoding::LengthPrefixed,
        json_format: JsonFormat::Allow,
    };

    /// These features with those `set` sets overriding them (a child element's resolution).
    /// Unknown enum numbers and `*_UNKNOWN` (0) leave the inherited value.
    pub(crate) fn merge(mut self, set: Option<&RawFeatureSet>) -> Features {
        let Some(set) = set else { return self };
        match set.field_presence {
            Some(1) => self.field_presence = FieldPresence::Explicit,
            Some(2) => self.field_presence = FieldPresence::Implicit,
            Some(3) => self.field_presence = FieldPresence::LegacyRequired,
            _ => {}
        }
        match set.enum_type {
            Some(1) => self.enum_type = EnumKind::Open,
            Some(2) => self.enum_type = EnumKind::Closed,
            _ => {}
        }
        match set.repeated_field_encoding {
            Some(1) => self.repeated_field_encoding = RepeatedEncoding::Packed,
            Some(2) => self.repeated_field_encoding = RepeatedEncoding::Expanded,
            _ => {}
        }
        match set.utf8_validation {
            Some(2) => self.utf8_validation = Utf8Validation::Verify,
            Some(3) => self.utf8_validation = Utf8Validation::None,
            _ => {}
        }
        match set.message_encoding {
            Some(1) => self.message_encoding = MessageEncoding::LengthPrefixed,
            Some(2) => self.message_encoding = MessageEncoding::Delimited,
            _ => {}
        }
        match set.json_format {
            Some(1) => self.json_format = JsonFormat::Allow,
            Some(2) => self.json_format = JsonFormat::LegacyBestEffort,
            _ => {}
        }
        self
    }

    /// A field's features: these (its parent's) with the field's own `features` option and,
    /// in a proto2 or proto3 file, what protoc infers from its label, type and `packed`
    /// option.
    pub(crate) fn for_field(
        self,
        edition: i32,
        f: &FieldDescriptorProto,
        raw: Option<&RawField>,
    ) -> Features {
        let mut features = self.merge(raw.and_then(|r| r.options.as_ref()?.features.as_ref()));
        if edition == EDITION_PROTO2 || edition == EDITION_PROTO3 {
            if f.label() == Label::Required {
                features.field_presence = FieldPresence::LegacyRequired;
            }
            if f.r#type() == Type::Group {
                features.message_encoding = MessageEncoding::Delimited;
            }
            match f.options.as_ref().and_then(|o| o.packed) {
                Some(true) => features.repeated_field_encoding = RepeatedEncoding::Packed,
                Some(false) if edition == EDITION_PROTO3 => {
                    features.repeated_field_encoding = RepeatedEncoding::Expanded
                }
                _ => {}
            }
        }
        features
    }
}

/// A file's edition and its resolved file-level features.
///
/// # Errors
/// [`SchemaError::Invalid`] for an edition other than proto2, proto3 and 2023.
pub(crate) fn file_features(
    file: &FileDescriptorProto,
    raw: Option<&RawFile>,
) -> Result<(i32, Features), SchemaError> {
    let edition = match (file.syntax.as_deref(), raw.and_then(|r| r.edition)) {
        (Some("proto3"), _) => EDITION_PROTO3,
        (Some("editions"), Some(e)) => e,
        // prost-types drops `edition`: a set given as decoded descriptors says only "editions".
        (Some("editions"), None) => EDITION_2023,
        (None | Some("proto2" | ""), _) => EDITION_PROTO2,
        (Some(other), _) => {
            return Err(SchemaError::Invalid {
                element: file.name().to_string(),
                why: format!("unknown syntax {other:?}"),
            })
        }
    };
    let defaults = match edition {
        EDITION_PROTO2 => Features::PROTO2,
        EDITION_PROTO3 => Features::PROTO3,
        EDITION_2023 => Features::EDITION_2023,
        other => {
            return Err(SchemaError::Invalid {
                element: file.name().to_string(),
                why: format!(
                    "edition {} is not supported (optimus resolves proto2, proto3 and 2023)",
                    edition_name(other)
                ),
            })
        }
    };
    let own = raw.and_then(|r| r.options.as_ref()?.features.as_ref());
    Ok((edition, defaults.merge(own)))
}

fn edition_name(edition: i32) -> String {
    match edition {
        1001 => "2024".into(),
        900 => "LEGACY".into(),
        1 => "1_TEST_ONLY".into(),
        2 => "2_TEST_ONLY".into(),
        e => e.to_string(),
    }
}

// The slice of `descriptor.proto` that editions add and prost-types 0.14 lacks: the same
// messages, with only the fields on the way to `edition` and `features`.

/// `google.protobuf.FeatureSet` (the features optimus resolves).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RawFeatureSet {
    #[prost(int32, optional, tag = "1")]
    pub field_presence: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub enum_type: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub repeated_field_encoding: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub utf8_validation: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub message_encoding: Option<i32>,
    #[prost(int32, optional, tag = "6")]
    pub json_format: Option<i32>,
}

macro_rules! options_with_features {
    ($name:ident, $tag:literal) => {
        /// Options of one element: only their `features`.
        #[derive(Clone, PartialEq, prost::Message)]
        pub(crate) struct $name {
            #[prost(message, optional, tag = $tag)]
            pub features: Option<RawFeatureSet>,
        }
    };
}
options_with_features!(RawFileOptions, "50");
options_with_features!(RawMessageOptions, "12");
options_with_features!(RawFieldOptions, "21");
options_with_features!(RawOneofOptions, "1");
options_with_features!(RawEnumOptions, "7");

/// `FileDescriptorSet`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RawSet {
    #[prost(message, repeated, tag = "1")]
    pub file: Vec<RawFile>,
}

/// `FileDescriptorProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RawFile {
    #[prost(message, repeated, tag = "4")]
    pub message_type: Vec<RawMessage>,
    #[prost(message, repeated, tag = "5")]
    pub enum_type: Vec<RawEnum>,
    #[prost(message, repeated, tag = "7")]
    pub extension: Vec<RawField>,
    #[prost(message, optional, tag = "8")]
    pub options: Option<RawFileOptions>,
    #[prost(int32, optional, tag = "14")]
    pub edition: Option<i32>,
}

/// `DescriptorProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RawMessage {
    #[prost(message, repeated, tag = "2")]
    pub field: Vec<RawField>,
    #[prost(message, repeated, tag = "3")]
    pub nested_type: Vec<RawMessage>,
    #[prost(message, repeated, tag = "4")]
    pub enum_type: Vec<RawEnum>,
    #[prost(message, repeated, tag = "6")]
    pub extension: Vec<RawField>,
    #[prost(message, optional, tag = "7")]
    pub options: Option<RawMessageOptions>,
    #[prost(message, repeated, tag = "8")]
    pub oneof_decl: Vec<RawOneof>,
}

/// `FieldDescriptorProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RawField {
    #[prost(message, optional, tag = "8")]
    pub options: Option<RawFieldOptions>,
}

/// `OneofDescriptorProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RawOneof {
    #[prost(message, optional, tag = "2")]
    pub options: Option<RawOneofOptions>,
}

/// `EnumDescriptorProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RawEnum {
    #[prost(message, optional, tag = "3")]
    pub options: Option<RawEnumOptions>,
}

impl RawMessage {
    pub(crate) fn features(&self) -> Option<&RawFeatureSet> {
        self.options.as_ref()?.features.as_ref()
    }
}

impl RawEnum {
    pub(crate) fn features(&self) -> Option<&RawFeatureSet> {
        self.options.as_ref()?.features.as_ref()
    }
}

impl RawOneof {
    pub(crate) fn features(&self) -> Option<&RawFeatureSet> {
        self.options.as_ref()?.features.as_ref()
    }
}

/// Whether `.proto` text declares an edition (`edition = "..."` as its first statement,
/// after comments): what protox 0.9 cannot parse.
pub(crate) fn declares_edition(source: &str) -> bool {
    let mut rest = source;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
        if let Some(r) = rest.strip_prefix("//") {
            rest = r.split_once('\n').map_or("", |(_, r)| r);
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map_or("", |(_, r)| r);
        } else {
            break;
        }
    }
    rest.strip_prefix("edition")
        .is_some_and(|r| r.trim_start().starts_with('='))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{EntryFlags, Op, Scalar, Shape};
    use crate::{Cardinality, Kind, SchemaSet, Syntax};
    use prost_types::{
        DescriptorProto, EnumDescriptorProto, EnumValueDescriptorProto, FileDescriptorSet,
        OneofDescriptorProto,
    };

    /// protoc 27.2's descriptor set of `testdata/editions_zoo.proto` (see testdata/README.md).
    const ZOO_SET: &[u8] = include_bytes!("testdata/editions_zoo.pb");

    fn zoo() -> SchemaSet {
        SchemaSet::from_descriptor_set_bytes(ZOO_SET).unwrap()
    }

    #[test]
    fn protoc_written_editions_set_resolves_every_feature() {
        let s = zoo();
        let id = s.message_by_name("zoo.ed.Zoo").unwrap();
        let m = s.message(id);
        assert_eq!(m.syntax, Syntax::Editions);
        let f = |n: u32| m.field_by_number(n).unwrap();
        let entry = |n: u32| m.table.entries[m.field_index_by_number(n).unwrap()];
        // File-level IMPLICIT: a plain scalar has no presence...
        assert_eq!(f(1).cardinality, Cardinality::Singular);
        assert_eq!(f(1).features.field_presence, FieldPresence::Implicit);
        assert!(!entry(1).has_presence());
        // ...unless the field says EXPLICIT or LEGACY_REQUIRED.
        assert_eq!(f(2).cardinality, Cardinality::Optional);
        assert!(entry(2).has_presence());
        assert!(f(3).is_required && f(3).has_presence());
        assert_eq!(
            m.required_fields,
            [m.field_index_by_number(3).unwrap() as u32]
        );
        assert!(m.may_lack_required);
        // Closed and open enums.
        let closed = s.enum_type(s.enum_by_name("zoo.ed.Closed").unwrap());
        let open = s.enum_type(s.enum_by_name("zoo.ed.Open").unwrap());
        assert!(closed.is_closed && !open.is_closed);
        assert_eq!(entry(4).op, Op::new(Scalar::ClosedEnum, Shape::Single));
        assert_eq!(entry(4).flags & EntryFlags::PLAIN_SCALAR, 0);
        assert_eq!(entry(5).op, Op::new(Scalar::ClosedEnum, Shape::Packed));
        assert_eq!(entry(6).op, Op::new(Scalar::OpenEnum, Shape::Single));
        // PACKED by default, EXPANDED where a field says so.
        assert!(f(7).is_packed && !f(8).is_packed);
        assert_eq!(entry(7).op, Op::new(Scalar::Int32, Shape::Packed));
        assert_eq!(entry(8).op, Op::new(Scalar::Int32, Shape::Repeated));
        // DELIMITED message fields are groups (single, repeated, in a oneof), keeping the
        // field's own name and JSON name; LENGTH_PREFIXED ones and maps are not.
        for (n, shape) in [
            (9, Shape::Single),
            (10, Shape::Repeated),
            (15, Shape::Single),
        ] {
            assert_eq!(f(n).kind, Kind::Group, "{n}");
            assert_eq!(entry(n).op, Op::new(Scalar::Group, shape), "{n}");
            assert_eq!(f(n).features.message_encoding, MessageEncoding::Delimited);
        }
        assert_eq!(
            (f(9).name.as_str(), f(9).json_name.as_str()),
            ("delimited", "delimited")
        );
        assert_eq!(f(10).json_name, "delimitedList");
        // Named for the field, not its type: not group-like (text format says `delimited`).
        assert!(!f(9).is_group_like && !f(15).is_group_like);
        assert_eq!(f(11).kind, Kind::Message);
        assert_eq!(f(12).cardinality, Cardinality::Map);
        assert_eq!(entry(12).op.shape(), Shape::Map);
        assert!(f(15).oneof.is_some() && f(14).oneof.is_some());
        // Message fields and oneof members keep presence under IMPLICIT.
        assert!(f(11).has_presence() && f(14).has_presence());
        // utf8_validation NONE (file) and json_format LEGACY_BEST_EFFORT (message) inherited.
        assert_eq!(f(13).features.utf8_validation, Utf8Validation::None);
        assert_eq!(f(13).features.json_format, JsonFormat::LegacyBestEffort);
        // An explicit field inside the nested message, which inherits IMPLICIT from the file.
        let inner = s.message(s.message_by_name("zoo.ed.Zoo.Inner").unwrap());
        assert_eq!(inner.fields[0].cardinality, Cardinality::Optional);
        assert_eq!(
            inner.fields[0].features.json_format,
            JsonFormat::LegacyBestEffort
        );
        // A map's entry value is length-prefixed even beside a delimited field.
        let d = s.message(s.message_by_name("zoo.ed.Delimited").unwrap());
        assert_eq!(d.field_by_number(1).unwrap().kind, Kind::Group);
        assert_eq!(
            d.field_by_number(1).unwrap().features.json_format,
            JsonFormat::Allow
        );
        let (_, value) = s.map_entry_fields(d.field_by_number(2).unwrap());
        assert_eq!(value.kind, Kind::Message);
    }

    fn int32(name: &str, number: i32) -> FieldDescriptorProto {
        FieldDescriptorProto {
            name: Some(name.into()),
            number: Some(number),
            label: Some(Label::Optional as i32),
            r#type: Some(Type::Int32 as i32),
            ..Default::default()
        }
    }

    fn set_of(features: RawFeatureSet) -> Option<RawFeatureSet> {
        Some(features)
    }

    /// One editions file built by hand: features on file, message, oneof, field and enum,
    /// where protoc would not allow some of them, to test the inheritance itself.
    fn handmade(edition: i32) -> (FileDescriptorSet, RawSet) {
        let mut repeated = int32("r", 3);
        repeated.label = Some(Label::Repeated as i32);
        let mut in_oneof = int32("o", 4);
        in_oneof.oneof_index = Some(0);
        let mut with_enum = int32("e", 5);
        with_enum.r#type = Some(Type::Enum as i32);
        with_enum.type_name = Some(".h.M.E".into());
        let set = FileDescriptorSet {
            file: vec![FileDescriptorProto {
                name: Some("h.proto".into()),
                package: Some("h".into()),
                syntax: Some("editions".into()),
                message_type: vec![DescriptorProto {
                    name: Some("M".into()),
                    field: vec![int32("a", 1), int32("b", 2), repeated, in_oneof, with_enum],
                    oneof_decl: vec![OneofDescriptorProto {
                        name: Some("choice".into()),
                        options: None,
                    }],
                    enum_type: vec![EnumDescriptorProto {
                        name: Some("E".into()),
                        value: vec![EnumValueDescriptorProto {
                            name: Some("E0".into()),
                            number: Some(0),
                            options: None,
                        }],
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        let raw = RawSet {
            file: vec![RawFile {
                edition: Some(edition),
                options: Some(RawFileOptions {
                    features: set_of(RawFeatureSet {
                        field_presence: Some(2), // IMPLICIT
                        enum_type: Some(2),      // CLOSED
                        ..Default::default()
                    }),
                }),
                message_type: vec![RawMessage {
                    options: Some(RawMessageOptions {
                        features: set_of(RawFeatureSet {
                            repeated_field_encoding: Some(2), // EXPANDED
                            utf8_validation: Some(3),         // NONE
                            ..Default::default()
                        }),
                    }),
                    field: vec![
                        RawField::default(),
                        RawField {
                            options: Some(RawFieldOptions {
                                features: set_of(RawFeatureSet {
                                    field_presence: Some(1),  // EXPLICIT
                                    utf8_validation: Some(2), // VERIFY
                                    ..Default::default()
                                }),
                            }),
                        },
                        RawField::default(),
                        RawField::default(),
                        RawField::default(),
                    ],
                    oneof_decl: vec![RawOneof {
                        options: Some(RawOneofOptions {
                            features: set_of(RawFeatureSet {
                                json_format: Some(2), // LEGACY_BEST_EFFORT
                                ..Default::default()
                            }),
                        }),
                    }],
                    enum_type: vec![RawEnum {
                        options: Some(RawEnumOptions {
                            features: set_of(RawFeatureSet {
                                enum_type: Some(1), // OPEN
                                ..Default::default()
                            }),
                        }),
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        (set, raw)
    }

    #[test]
    fn features_inherit_file_message_oneof_field() {
        let (set, raw) = handmade(EDITION_2023);
        let s = crate::compile::compile_with(&set, Some(&raw)).unwrap();
        let m = s.message(s.message_by_name("h.M").unwrap());
        let f = |n: u32| m.field_by_number(n).unwrap();
        // a: file IMPLICIT, message EXPANDED and NONE.
        assert_eq!(f(1).cardinality, Cardinality::Singular);
        assert_eq!(
            f(1).features,
            Features {
                field_presence: FieldPresence::Implicit,
                enum_type: EnumKind::Closed,
                repeated_field_encoding: RepeatedEncoding::Expanded,
                utf8_validation: Utf8Validation::None,
                message_encoding: MessageEncoding::LengthPrefixed,
                json_format: JsonFormat::Allow,
            }
        );
        // b: its own EXPLICIT and VERIFY win.
        assert_eq!(f(2).cardinality, Cardinality::Optional);
        assert_eq!(f(2).features.utf8_validation, Utf8Validation::Verify);
        // r: the message's EXPANDED over the edition's PACKED.
        assert!(!f(3).is_packed);
        // o: the oneof's json_format reaches its member.
        assert_eq!(f(4).features.json_format, JsonFormat::LegacyBestEffort);
        assert_eq!(f(1).features.json_format, JsonFormat::Allow);
        // E: the enum's own OPEN over the file's CLOSED.
        assert!(!s.enum_type(s.enum_by_name("h.M.E").unwrap()).is_closed);
        assert_eq!(
            m.table.entries[m.field_index_by_number(5).unwrap()].op,
            Op::new(Scalar::OpenEnum, Shape::Single)
        );

        // Without the raw slice (prost-types lacks it), edition 2023's defaults.
        let s = SchemaSet::from_descriptor_set(&set).unwrap();
        let m = s.message(s.message_by_name("h.M").unwrap());
        assert_eq!(
            m.field_by_number(1).unwrap().features,
            Features::EDITION_2023
        );
        assert!(m.field_by_number(3).unwrap().is_packed);
        assert_eq!(
            m.field_by_number(1).unwrap().cardinality,
            Cardinality::Optional
        );
    }

    #[test]
    fn unsupported_editions_are_errors() {
        let (set, raw) = handmade(1001);
        let e = crate::compile::compile_with(&set, Some(&raw)).unwrap_err();
        assert!(
            e.to_string().contains("edition 2024 is not supported"),
            "{e}"
        );
    }

    #[test]
    fn proto2_and_proto3_map_onto_the_same_features() {
        let s = SchemaSet::from_source(
            r#"syntax = "proto2"; package p;
               enum E { A = 1; }
               message M { required int32 r = 1; optional int32 o = 2;
                           repeated int32 x = 3; repeated int32 y = 4 [packed = true];
                           optional group G = 5 { optional int32 g = 6; } optional E e = 7; }"#,
        )
        .unwrap();
        let m = s.message(s.message_by_name("p.M").unwrap());
        let f = |n: u32| m.field_by_number(n).unwrap().features;
        assert_eq!(f(1).field_presence, FieldPresence::LegacyRequired);
        assert_eq!(f(2), Features::PROTO2);
        assert_eq!(f(3).repeated_field_encoding, RepeatedEncoding::Expanded);
        assert_eq!(f(4).repeated_field_encoding, RepeatedEncoding::Packed);
        assert_eq!(f(5).message_encoding, MessageEncoding::Delimited);
        assert_eq!(m.field_by_number(5).unwrap().kind, Kind::Group);
        assert!(m.field_by_number(5).unwrap().is_group_like);
        assert!(!m.field_by_number(2).unwrap().is_group_like);
        assert!(s.enum_type(s.enum_by_name("p.E").unwrap()).is_closed);

        let s = SchemaSet::from_source(
            r#"syntax = "proto3"; package q;
               message M { int32 a = 1; optional int32 b = 2; repeated int32 c = 3;
                           repeated int32 d = 4 [packed = false]; }"#,
        )
        .unwrap();
        let m = s.message(s.message_by_name("q.M").unwrap());
        let f = |n: u32| m.field_by_number(n).unwrap();
        assert_eq!(f(1).features, Features::PROTO3);
        assert_eq!(f(1).cardinality, Cardinality::Singular);
        assert_eq!(f(2).cardinality, Cardinality::Optional);
        assert!(f(3).is_packed);
        assert_eq!(
            f(4).features.repeated_field_encoding,
            RepeatedEncoding::Expanded
        );
        assert!(!f(4).is_packed);
    }

    #[test]
    fn editions_text_is_refused_with_a_clear_error() {
        let text = include_str!("testdata/editions_zoo.proto");
        let e = SchemaSet::from_source(text).unwrap_err().to_string();
        assert!(e.starts_with("input.proto: protobuf editions files"), "{e}");
        assert!(
            e.contains("protoc --include_imports -o set.pb input.proto"),
            "{e}"
        );
        // The same from a file on disk, named as given.
        let dir = std::env::temp_dir().join(format!("optimus-editions-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ed.proto");
        std::fs::write(&path, text).unwrap();
        let e = SchemaSet::from_proto_files(&[&path], &[&dir])
            .unwrap_err()
            .to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(e.starts_with("ed.proto: protobuf editions files"), "{e}");
        // Other parse errors are protox's own.
        let e = SchemaSet::from_source("syntax = \"proto3\"; message {").unwrap_err();
        assert!(!e.to_string().contains("editions"), "{e}");
    }

    #[test]
    fn edition_declarations_are_recognized() {
        assert!(declares_edition("edition = \"2023\";"));
        assert!(declares_edition("// c\n/* d */\n  edition=\"2023\";"));
        assert!(!declares_edition("syntax = \"proto3\";"));
        assert!(!declares_edition(
            "// edition = \"2023\"\nsyntax = \"proto2\";"
        ));
        assert!(!declares_edition("editions = 1;"));
    }
}
