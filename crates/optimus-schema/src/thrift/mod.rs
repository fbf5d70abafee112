//! Thrift IDL loaded at run time into the same [`SchemaSet`] the protobuf side uses.
//!
//! `.thrift` files (with their `include`s) are parsed by [`parse`] and lowered to descriptors
//! that `compile` turns into message types, fields, op tables and record layouts, exactly as
//! for `.proto` files; each type then carries a [`ThriftStruct`] with what the Thrift wire
//! formats need beyond the op table: every field's Thrift id and [`TType`] (so `byte`, `i16`
//! and `i32`, or `string` and `binary`, keep their exact wire forms), requiredness, default,
//! and the order Apache Thrift writes fields in (by id).
//!
//! The mapping (docs/thrift.md has the full table):
//! - a program (file stem `peers` of `peers.thrift`) is a package: `struct Flat` is
//!   `peers.Flat`; `union` and `exception` are structs, every union field optional;
//! - `bool`, `double`, `string`, `binary` are protobuf `bool`, `double`, `string`, `bytes`;
//!   `byte`, `i16` and `i32` are `int32` in the record; `i64` is `int64`; enums are open enums;
//! - `list<T>` and `set<T>` are repeated fields (a set keeps its wire order); `map<K, V>` is a
//!   map field whose entry type `Owner.field.entry` has the key as field 1 and the value as
//!   field 2 (a repeated field of those entries where protobuf allows no such map key);
//! - a container inside a container (a list element, map key or value) is a *wrapper*
//!   message `Owner.field.elem` (`.key`, `.value`) whose one field `value` (1) holds it, as
//!   protobuf maps hold entries in synthetic messages;
//! - field id *n* ≥ 1 is field number *n*; ids ≤ 0 (`0: success`, implicit negative ids) are
//!   numbers 65536 + (id as u16), see [`field_number`];
//! - a service's function `f` gets Apache Thrift's `Service.f_args` and `Service.f_result`
//!   structs (`0: success` and the declared exceptions) and is a [`crate::Method`].

pub mod parse;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use prost_types::field_descriptor_proto::{Label, Type as PType};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, EnumValueDescriptorProto, FieldDescriptorProto,
    FileDescriptorProto, FileDescriptorSet, MessageOptions, MethodDescriptorProto,
    ServiceDescriptorProto,
};

pub use parse::{Base, ConstValue, Requiredness};
use parse::{Definition, Document, FieldDecl, StructKind, Type};

use crate::load::find_file;
use crate::types::{DefaultValue, MessageId, SchemaSet};
use crate::SchemaError;

/// A value's Thrift type: the wire type code plus the distinctions the IDL makes on top of
/// it (`binary` beside `string`, enums beside `i32`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum TType {
    /// `bool` (wire 2).
    Bool = 2,
    /// `byte` / `i8` (wire 3).
    Byte = 3,
    /// `double` (wire 4).
    Double = 4,
    /// `i16` (wire 6).
    I16 = 6,
    /// `i32` (wire 8).
    I32 = 8,
    /// `i64` (wire 10).
    I64 = 10,
    /// `string`: UTF-8 (wire 11).
    String = 11,
    /// A struct, union or exception (wire 12).
    Struct = 12,
    /// `map<K, V>` (wire 13).
    Map = 13,
    /// `set<T>` (wire 14).
    Set = 14,
    /// `list<T>` (wire 15).
    List = 15,
    /// `binary`: opaque bytes (wire 11, as `string`).
    Binary = 16,
    /// An enum: its value's number as an `i32` (wire 8).
    Enum = 17,
}

impl TType {
    /// The type code TBinaryProtocol writes (TCompactProtocol maps it to its own codes).
    #[inline]
    pub const fn wire(self) -> u8 {
        match self {
            TType::Binary => 11,
            TType::Enum => 8,
            t => t as u8,
        }
    }

    /// Whether values are lists, sets or maps.
    #[inline]
    pub const fn is_container(self) -> bool {
        matches!(self, TType::List | TType::Set | TType::Map)
    }

    /// The name the IDL uses.
    pub const fn name(self) -> &'static str {
        match self {
            TType::Bool => "bool",
            TType::Byte => "byte",
            TType::Double => "double",
            TType::I16 => "i16",
            TType::I32 => "i32",
            TType::I64 => "i64",
            TType::String => "string",
            TType::Struct => "struct",
            TType::Map => "map",
            TType::Set => "set",
            TType::List => "list",
            TType::Binary => "binary",
            TType::Enum => "enum",
        }
    }
}

/// The Thrift side of one field (or of a wrapper's or map entry's value).
#[derive(Debug, Clone, PartialEq)]
pub struct ThriftField {
    /// The field id on the wire.
    pub id: i16,
    /// The field's type.
    pub ty: TType,
    /// For a list or set: the element type (a container element is a wrapper message).
    pub elem: TType,
    /// For a map: the key type.
    pub key: TType,
    /// For a map: the value type.
    pub value: TType,
    /// Requiredness as declared.
    pub requiredness: Requiredness,
    /// The declared default, constants and enum names resolved (scalars also land in the
    /// descriptive field's `default`).
    pub default: Option<ConstValue>,
}

/// What a message type is on the Thrift side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThriftKind {
    /// `struct` (and a service function's `_args` / `_result`).
    Struct,
    /// `union`.
    Union,
    /// `exception`.
    Exception,
    /// A container in a container position: its field 1 holds the container.
    Wrapper,
    /// A map entry: key is field 1, value field 2.
    MapEntry,
}

/// The Thrift side of a message type.
#[derive(Debug, Clone, PartialEq)]
pub struct ThriftStruct {
    /// What the type is.
    pub kind: ThriftKind,
    /// Per field, in the type's field order (by number, as the op table's entries).
    pub fields: Vec<ThriftField>,
    /// Field indices in the order Apache Thrift writes them: by id, ascending.
    pub order: Vec<u16>,
    /// Whether that order is the fields' own (no id ≤ 0): the encoder then walks the
    /// presence bits instead of `order`.
    pub in_id_order: bool,
    /// Per presence word of the record, the bits of its `required` fields; empty when it has
    /// none.
    pub required: Vec<u64>,
    /// Per field, its TBinaryProtocol header in the low three bytes of a little-endian
    /// word: the type code, then the id big-endian.
    pub binary_headers: Vec<u32>,
}

impl ThriftStruct {
    /// The index of the field with Thrift id `id`, through the op table's number lookup.
    #[inline]
    pub fn find(&self, table: &crate::Table, id: i16) -> Option<usize> {
        table.find(field_number(id))
    }
}

/// A service's Thrift facts beyond its [`crate::Service`].
#[derive(Debug, Clone, PartialEq)]
pub struct ThriftService {
    /// Fully qualified name (`program.Service`).
    pub full_name: String,
    /// The service it extends, fully qualified.
    pub extends: Option<String>,
    /// Function names that are `oneway`.
    pub oneway: Vec<String>,
}

/// One loaded `.thrift` file.
#[derive(Debug, Clone, PartialEq)]
pub struct ThriftProgram {
    /// The program name (file stem): the package of its types.
    pub name: String,
    /// Where it was read from.
    pub path: PathBuf,
    /// Programs it includes, by name.
    pub includes: Vec<String>,
    /// `namespace` declarations: (scope, name).
    pub namespaces: Vec<(String, String)>,
    /// Constants, references resolved: (name, value).
    pub constants: Vec<(String, ConstValue)>,
    /// Typedef names.
    pub typedefs: Vec<String>,
    /// Services.
    pub services: Vec<ThriftService>,
}

/// The Thrift facts of a schema loaded from `.thrift` files.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ThriftInfo {
    /// Every program, the files named first.
    pub programs: Vec<ThriftProgram>,
}

/// The field number of Thrift field id `id`: `id` itself when positive, else
/// `65536 + (id as u16)` (so `0` is 65536 and `-1` is 131071), above every positive id.
#[inline]
pub const fn field_number(id: i16) -> u32 {
    if id > 0 {
        id as u32
    } else {
        0x10000 + id as u16 as u32
    }
}

/// Files nested in includes deeper than this are refused (a cycle guard).
const MAX_INCLUDE_DEPTH: usize = 64;
/// Typedefs and constants referring to each other deeper than this are refused.
const MAX_ALIAS_DEPTH: usize = 64;

impl SchemaSet {
    /// Loads `.thrift` files and everything they `include`. An include is found beside the
    /// file that includes it, then under each of `includes` (like `thrift -I`).
    ///
    /// # Errors
    /// [`SchemaError::Io`] for a file that cannot be read, [`SchemaError::Compile`] with
    /// file and line for a syntax error, [`SchemaError::Invalid`] for a name that does not
    /// resolve, a duplicate id or a bad default.
    pub fn from_thrift_files(
        files: &[impl AsRef<Path>],
        includes: &[impl AsRef<Path>],
    ) -> Result<SchemaSet, SchemaError> {
        let includes: Vec<PathBuf> = includes.iter().map(|p| p.as_ref().to_path_buf()).collect();
        let mut loader = Loader::default();
        for f in files {
            let path = find_file(f.as_ref(), &includes)?;
            let text = std::fs::read_to_string(&path).map_err(|source| SchemaError::Io {
                path: path.clone(),
                source,
            })?;
            loader.add(&path, &text, &includes, 0)?;
        }
        loader.finish()
    }

    /// Loads in-memory `.thrift` sources given as `(file name, text)` pairs; they include
    /// each other by those names.
    ///
    /// # Errors
    /// As [`SchemaSet::from_thrift_files`].
    pub fn from_thrift_sources(sources: &[(&str, &str)]) -> Result<SchemaSet, SchemaError> {
        let mut loader = Loader {
            memory: sources
                .iter()
                .map(|(n, t)| (n.to_string(), t.to_string()))
                .collect(),
            ..Loader::default()
        };
        for (name, text) in sources {
            loader.add(Path::new(name), text, &[], 0)?;
        }
        loader.finish()
    }

    /// The Thrift facts, when this schema was loaded from `.thrift` files.
    pub fn thrift(&self) -> Option<&ThriftInfo> {
        self.thrift.as_deref()
    }

    /// The struct named `name` — `program.Name`, or a bare `Name` found in the first
    /// program that has it (the files named first).
    pub fn thrift_struct_by_name(&self, name: &str) -> Option<MessageId> {
        if let Some(id) = self.message_by_name(name) {
            return Some(id);
        }
        let info = self.thrift()?;
        info.programs
            .iter()
            .find_map(|p| self.message_by_name(&format!("{}.{name}", p.name)))
    }
}

struct Program {
    name: String,
    path: PathBuf,
    doc: Document,
}

#[derive(Default)]
struct Loader {
    programs: Vec<Program>,
    by_path: HashMap<PathBuf, usize>,
    memory: HashMap<String, String>,
}

impl Loader {
    fn add(
        &mut self,
        path: &Path,
        text: &str,
        includes: &[PathBuf],
        depth: usize,
    ) -> Result<usize, SchemaError> {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if let Some(&i) = self.by_path.get(&key) {
            return Ok(i);
        }
        if depth > MAX_INCLUDE_DEPTH {
            return Err(SchemaError::Compile(format!(
                "{}: includes nest deeper than {MAX_INCLUDE_DEPTH} files",
                path.display()
            )));
        }
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("main")
            .to_string();
        if let Some(other) = self.programs.iter().find(|p| p.name == name) {
            return Err(SchemaError::Compile(format!(
                "{} and {} are both program {name}",
                other.path.display(),
                path.display()
            )));
        }
        let doc = parse::parse(&path.display().to_string(), text)?;
        let index = self.programs.len();
        self.by_path.insert(key, index);
        self.programs.push(Program {
            name,
            path: path.to_path_buf(),
            doc: doc.clone(),
        });
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        for inc in &doc.includes {
            if let Some(text) = self.memory.get(inc).cloned() {
                self.add(Path::new(inc), &text, includes, depth + 1)?;
                continue;
            }
            let mut tried = Vec::new();
            let found = std::iter::once(dir.join(inc))
                .chain(includes.iter().map(|d| d.join(inc)))
                .find(|p| {
                    tried.push(p.display().to_string());
                    p.is_file()
                });
            let Some(found) = found else {
                return Err(SchemaError::Compile(format!(
                    "{}: include \"{inc}\" not found (tried {})",
                    path.display(),
                    tried.join(", ")
                )));
            };
            let text = std::fs::read_to_string(&found).map_err(|source| SchemaError::Io {
                path: found.clone(),
                source,
            })?;
            self.add(&found, &text, includes, depth + 1)?;
        }
        Ok(index)
    }

    fn finish(self) -> Result<SchemaSet, SchemaError> {
        Lowering::new(&self.programs)?.run()
    }
}

/// A named type after typedefs are followed.
#[derive(Debug, Clone, PartialEq)]
enum RType {
    Base(Base),
    Struct(String),
    Enum(String),
    List(Box<RType>),
    Set(Box<RType>),
    Map(Box<RType>, Box<RType>),
}

#[derive(Clone)]
enum Named {
    Struct,
    Enum(Vec<(String, i32)>),
    Typedef(Type, usize),
    Const(ConstValue, usize),
}

/// Thrift facts of a message, by full name, before compile numbers its fields.
struct Pending {
    kind: ThriftKind,
    fields: Vec<ThriftField>,
}

struct Lowering<'p> {
    programs: &'p [Program],
    names: HashMap<String, Named>,
    pending: HashMap<String, Pending>,
    /// (message full name, field number, resolved type, default) for scalar defaults.
    defaults: Vec<(String, u32, ConstValue)>,
}

impl<'p> Lowering<'p> {
    fn new(programs: &'p [Program]) -> Result<Lowering<'p>, SchemaError> {
        let mut names = HashMap::new();
        for (pi, p) in programs.iter().enumerate() {
            for d in &p.doc.definitions {
                let (name, named) = match d {
                    Definition::Struct { name, .. } => (name, Named::Struct),
                    Definition::Enum { name, values } => (name, Named::Enum(values.clone())),
                    Definition::Typedef { name, ty } => (name, Named::Typedef(ty.clone(), pi)),
                    Definition::Const { name, value, .. } => {
                        (name, Named::Const(value.clone(), pi))
                    }
                    Definition::Service { .. } => continue,
                };
                let full = format!("{}.{name}", p.name);
                if names.insert(full.clone(), named).is_some() {
                    return Err(invalid(&full, "defined twice"));
                }
            }
        }
        Ok(Lowering {
            programs,
            names,
            pending: HashMap::new(),
            defaults: Vec::new(),
        })
    }

    /// The full name `name` means in program `pi`: `Name` there, or `program.Name` of a
    /// program it includes.
    fn qualify(&self, pi: usize, name: &str) -> String {
        let own = format!("{}.{name}", self.programs[pi].name);
        if self.names.contains_key(&own) || !name.contains('.') {
            own
        } else {
            name.to_string()
        }
    }

    fn resolve(&self, pi: usize, ty: &Type, depth: usize) -> Result<RType, SchemaError> {
        if depth > MAX_ALIAS_DEPTH {
            return Err(invalid(
                &format!("{ty:?}"),
                "typedefs refer to each other in a cycle",
            ));
        }
        Ok(match ty {
            Type::Base(b) => RType::Base(*b),
            Type::List(t) => RType::List(Box::new(self.resolve(pi, t, depth)?)),
            Type::Set(t) => RType::Set(Box::new(self.resolve(pi, t, depth)?)),
            Type::Map(k, v) => RType::Map(
                Box::new(self.resolve(pi, k, depth)?),
                Box::new(self.resolve(pi, v, depth)?),
            ),
            Type::Named(n) => {
                let full = self.qualify(pi, n);
                match self.names.get(&full) {
                    Some(Named::Struct) => RType::Struct(full),
                    Some(Named::Enum(_)) => RType::Enum(full),
                    Some(Named::Typedef(t, tpi)) => self.resolve(*tpi, t, depth + 1)?,
                    _ => {
                        return Err(invalid(
                            &format!("{}.thrift", self.programs[pi].name),
                            &format!("unknown type {n}"),
                        ))
                    }
                }
            }
        })
    }

    /// `value` with constant references and enum names replaced by their values.
    fn const_value(
        &self,
        pi: usize,
        value: &ConstValue,
        depth: usize,
    ) -> Result<ConstValue, SchemaError> {
        if depth > MAX_ALIAS_DEPTH {
            return Err(invalid(
                "constant",
                "constants refer to each other in a cycle",
            ));
        }
        Ok(match value {
            ConstValue::Ident(s) if s == "true" => ConstValue::Int(1),
            ConstValue::Ident(s) if s == "false" => ConstValue::Int(0),
            ConstValue::Ident(s) => {
                let full = self.qualify(pi, s);
                if let Some(Named::Const(v, cpi)) = self.names.get(&full) {
                    return self.const_value(*cpi, v, depth + 1);
                }
                // `Enum.VALUE` or `program.Enum.VALUE`; Apache Thrift also takes a value by its
                // bare name (`VALUE`, `program.VALUE`) and, where `Enum` lacks `VALUE`, the
                // program's other enums' values.
                let (owner, value_name) = s.rsplit_once('.').unwrap_or(("", s));
                if let Some(Named::Enum(values)) = self.names.get(&self.qualify(pi, owner)) {
                    if let Some(&(_, v)) = values.iter().find(|(n, _)| n == value_name) {
                        return Ok(ConstValue::Int(i64::from(v)));
                    }
                }
                let program = match owner.split_once('.') {
                    Some((p, _)) => p,
                    None if self.programs.iter().any(|p| p.name == owner) => owner,
                    None => &self.programs[pi].name,
                };
                let prefix = format!("{program}.");
                let mut found = self.names.iter().filter_map(|(name, named)| match named {
                    Named::Enum(values) if name.starts_with(&prefix) => values
                        .iter()
                        .find(|(n, _)| n == value_name)
                        .map(|&(_, v)| v),
                    _ => None,
                });
                match (found.next(), found.next()) {
                    (Some(v), None) => ConstValue::Int(i64::from(v)),
                    (Some(_), Some(_)) => return Err(invalid(s, "ambiguous enum value")),
                    _ => return Err(invalid(s, "unknown constant")),
                }
            }
            ConstValue::List(items) => ConstValue::List(
                items
                    .iter()
                    .map(|v| self.const_value(pi, v, depth))
                    .collect::<Result<_, _>>()?,
            ),
            ConstValue::Map(items) => ConstValue::Map(
                items
                    .iter()
                    .map(|(k, v)| {
                        Ok((
                            self.const_value(pi, k, depth)?,
                            self.const_value(pi, v, depth)?,
                        ))
                    })
                    .collect::<Result<_, SchemaError>>()?,
            ),
            v => v.clone(),
        })
    }

    fn run(mut self) -> Result<SchemaSet, SchemaError> {
        let mut files = Vec::new();
        let mut info = ThriftInfo::default();
        for (pi, p) in self.programs.iter().enumerate() {
            let mut file = FileDescriptorProto {
                name: Some(format!("{}.thrift", p.name)),
                package: Some(p.name.clone()),
                syntax: Some("proto2".into()),
                ..Default::default()
            };
            let mut prog = ThriftProgram {
                name: p.name.clone(),
                path: p.path.clone(),
                includes: p
                    .doc
                    .includes
                    .iter()
                    .map(|i| {
                        Path::new(i)
                            .file_stem()
                            .and_then(|s| s.to_str())
                            .unwrap_or(i)
                            .to_string()
                    })
                    .collect(),
                namespaces: p.doc.namespaces.clone(),
                constants: Vec::new(),
                typedefs: Vec::new(),
                services: Vec::new(),
            };
            for d in &p.doc.definitions {
                match d {
                    Definition::Const { name, value, .. } => {
                        prog.constants
                            .push((name.clone(), self.const_value(pi, value, 0)?));
                    }
                    Definition::Typedef { name, ty } => {
                        self.resolve(pi, ty, 0)?;
                        prog.typedefs.push(name.clone());
                    }
                    Definition::Enum { name, values } => {
                        file.enum_type.push(EnumDescriptorProto {
                            name: Some(name.clone()),
                            value: values
                                .iter()
                                .map(|(n, v)| EnumValueDescriptorProto {
                                    name: Some(n.clone()),
                                    number: Some(*v),
                                    ..Default::default()
                                })
                                .collect(),
                            ..Default::default()
                        });
                    }
                    Definition::Struct { kind, name, fields } => {
                        let kind = match kind {
                            StructKind::Struct => ThriftKind::Struct,
                            StructKind::Union => ThriftKind::Union,
                            StructKind::Exception => ThriftKind::Exception,
                        };
                        self.structure(pi, &mut file, name, kind, fields)?;
                    }
                    Definition::Service {
                        name,
                        extends,
                        functions,
                    } => {
                        let mut service = ServiceDescriptorProto {
                            name: Some(name.clone()),
                            ..Default::default()
                        };
                        let mut oneway = Vec::new();
                        for f in functions {
                            let args = format!("{name}.{}_args", f.name);
                            let result = format!("{name}.{}_result", f.name);
                            self.structure(pi, &mut file, &args, ThriftKind::Struct, &f.args)?;
                            let mut results = Vec::new();
                            if let Some(ret) = &f.ret {
                                results.push(FieldDecl {
                                    id: Some(0),
                                    req: Requiredness::Optional,
                                    ty: ret.clone(),
                                    name: "success".into(),
                                    default: None,
                                    line: 0,
                                });
                            }
                            results.extend(f.throws.iter().cloned().map(|mut t| {
                                t.req = Requiredness::Optional;
                                t
                            }));
                            self.structure(pi, &mut file, &result, ThriftKind::Struct, &results)?;
                            if f.oneway {
                                oneway.push(f.name.clone());
                            }
                            service.method.push(MethodDescriptorProto {
                                name: Some(f.name.clone()),
                                input_type: Some(format!(".{}.{args}", p.name)),
                                output_type: Some(format!(".{}.{result}", p.name)),
                                ..Default::default()
                            });
                        }
                        file.service.push(service);
                        prog.services.push(ThriftService {
                            full_name: format!("{}.{name}", p.name),
                            extends: extends.as_ref().map(|e| self.qualify(pi, e)),
                            oneway,
                        });
                    }
                }
            }
            files.push(file);
            info.programs.push(prog);
        }

        let mut schema = crate::compile::compile(&FileDescriptorSet { file: files })?;
        // Thrift enums are open: any i32 is a value.
        for e in &mut schema.enums {
            e.is_closed = false;
        }
        for (full_name, number, value) in std::mem::take(&mut self.defaults) {
            let id = schema.message_by_name(&full_name).expect("lowered type");
            let ty = &mut schema.messages[id.0 as usize];
            let i = ty.field_index_by_number(number).expect("lowered field");
            let f = &ty.fields[i];
            let d = scalar_default(f.kind, &value)
                .ok_or_else(|| invalid(&format!("{full_name}.{}", f.name), "bad default value"))?;
            ty.fields[i].default = Some(d);
        }
        for m in &mut schema.messages {
            let pending = self
                .pending
                .remove(&m.full_name)
                .expect("every lowered type has Thrift facts");
            let mut fields = Vec::with_capacity(m.fields.len());
            for f in &m.fields {
                let tf = pending
                    .fields
                    .iter()
                    .find(|t| field_number(t.id) == f.number)
                    .expect("every lowered field has Thrift facts");
                fields.push(tf.clone());
            }
            let mut order: Vec<u16> = (0..fields.len() as u16).collect();
            order.sort_by_key(|&i| fields[i as usize].id);
            let in_id_order = order.iter().enumerate().all(|(k, &i)| k == i as usize);
            let mut required = vec![0u64; fields.len().div_ceil(64)];
            for (i, f) in fields.iter().enumerate() {
                if f.requiredness == Requiredness::Required {
                    required[i / 64] |= 1 << (i % 64);
                }
            }
            if required.iter().all(|&w| w == 0) {
                required.clear();
            }
            let binary_headers = fields
                .iter()
                .map(|f| u32::from(f.ty.wire()) | u32::from((f.id as u16).swap_bytes()) << 8)
                .collect();
            m.thrift = Some(Box::new(ThriftStruct {
                kind: pending.kind,
                fields,
                order,
                in_id_order,
                required,
                binary_headers,
            }));
        }
        let enums = &schema.enums;
        for m in &mut schema.messages {
            m.table = crate::table::build(m, |e| enums[e as usize].is_closed);
        }
        schema.resolve_sub_types();
        schema.thrift = Some(Box::new(info));
        Ok(schema)
    }

    /// Lowers a struct-like definition (and the synthetic types its fields need).
    fn structure(
        &mut self,
        pi: usize,
        file: &mut FileDescriptorProto,
        name: &str,
        kind: ThriftKind,
        decls: &[FieldDecl],
    ) -> Result<(), SchemaError> {
        let full = format!("{}.{name}", self.programs[pi].name);
        let mut msg = DescriptorProto {
            name: Some(name.to_string()),
            ..Default::default()
        };
        let mut facts = Vec::new();
        let mut implicit = 0i64;
        let mut seen = std::collections::HashSet::new();
        for d in decls {
            let id = match d.id {
                Some(id) => id,
                None => {
                    implicit -= 1;
                    implicit
                }
            };
            let element = format!("{full}.{}", d.name);
            let id = i16::try_from(id)
                .map_err(|_| invalid(&element, &format!("field id {id} is not an i16")))?;
            if !seen.insert(id) {
                return Err(invalid(&element, &format!("field id {id} used twice")));
            }
            let rty = self.resolve(pi, &d.ty, 0)?;
            let req = if kind == ThriftKind::Union {
                Requiredness::Optional
            } else {
                d.req
            };
            let (fd, mut tf) = self.field(
                pi,
                file,
                &format!("{name}.{}", d.name),
                &d.name,
                id,
                req,
                &rty,
            )?;
            if let Some(v) = &d.default {
                let v = self.const_value(pi, v, 0)?;
                if !matches!(
                    rty,
                    RType::List(_) | RType::Set(_) | RType::Map(..) | RType::Struct(_)
                ) {
                    self.defaults
                        .push((full.clone(), field_number(id), v.clone()));
                }
                tf.default = Some(v);
            }
            msg.field.push(fd);
            facts.push(tf);
        }
        file.message_type.push(msg);
        self.pending.insert(
            full,
            Pending {
                kind,
                fields: facts,
            },
        );
        Ok(())
    }

    /// One field (`path` is `Type.field`, where its synthetic types go).
    #[allow(clippy::too_many_arguments)]
    fn field(
        &mut self,
        pi: usize,
        file: &mut FileDescriptorProto,
        path: &str,
        name: &str,
        id: i16,
        req: Requiredness,
        rty: &RType,
    ) -> Result<(FieldDescriptorProto, ThriftField), SchemaError> {
        let mut tf = ThriftField {
            id,
            ty: TType::Bool,
            elem: TType::Bool,
            key: TType::Bool,
            value: TType::Bool,
            requiredness: req,
            default: None,
        };
        let mut fd = FieldDescriptorProto {
            name: Some(name.to_string()),
            number: Some(field_number(id) as i32),
            json_name: Some(name.to_string()),
            ..Default::default()
        };
        match rty {
            RType::List(e) | RType::Set(e) => {
                tf.ty = if matches!(rty, RType::List(_)) {
                    TType::List
                } else {
                    TType::Set
                };
                let (t, n, tt) = self.position(pi, file, &format!("{path}.elem"), e)?;
                tf.elem = tt;
                fd.label = Some(Label::Repeated as i32);
                fd.r#type = Some(t as i32);
                fd.type_name = n;
            }
            RType::Map(k, v) => {
                tf.ty = TType::Map;
                let entry = format!("{path}.entry");
                let (kt, kn, ktt) = self.position(pi, file, &format!("{entry}.key"), k)?;
                let (vt, vn, vtt) = self.position(pi, file, &format!("{entry}.value"), v)?;
                tf.key = ktt;
                tf.value = vtt;
                let proto_key = matches!(
                    ktt,
                    TType::Bool
                        | TType::Byte
                        | TType::I16
                        | TType::I32
                        | TType::I64
                        | TType::String
                );
                let part =
                    |name: &str, number: i32, t: PType, n: Option<String>| FieldDescriptorProto {
                        name: Some(name.into()),
                        number: Some(number),
                        json_name: Some(name.into()),
                        label: Some(Label::Optional as i32),
                        r#type: Some(t as i32),
                        type_name: n,
                        ..Default::default()
                    };
                file.message_type.push(DescriptorProto {
                    name: Some(entry.clone()),
                    field: vec![part("key", 1, kt, kn), part("value", 2, vt, vn)],
                    options: proto_key.then(|| MessageOptions {
                        map_entry: Some(true),
                        ..Default::default()
                    }),
                    ..Default::default()
                });
                let part_fact = |id: i16, ty: TType| ThriftField {
                    id,
                    ty,
                    elem: TType::Bool,
                    key: TType::Bool,
                    value: TType::Bool,
                    requiredness: Requiredness::Optional,
                    default: None,
                };
                self.pending.insert(
                    format!("{}.{entry}", self.programs[pi].name),
                    Pending {
                        kind: ThriftKind::MapEntry,
                        fields: vec![part_fact(1, ktt), part_fact(2, vtt)],
                    },
                );
                fd.label = Some(Label::Repeated as i32);
                fd.r#type = Some(PType::Message as i32);
                fd.type_name = Some(format!(".{}.{entry}", self.programs[pi].name));
            }
            _ => {
                let (t, n, tt) = self.position(pi, file, path, rty)?;
                tf.ty = tt;
                fd.label = Some(if req == Requiredness::Required {
                    Label::Required
                } else {
                    Label::Optional
                } as i32);
                fd.r#type = Some(t as i32);
                fd.type_name = n;
            }
        }
        Ok((fd, tf))
    }

    /// A value in a position that holds one value (a field, an element, a key or a value): its
    /// protobuf type, type name and Thrift type. A container there becomes a wrapper message
    /// named `path`.
    fn position(
        &mut self,
        pi: usize,
        file: &mut FileDescriptorProto,
        path: &str,
        rty: &RType,
    ) -> Result<(PType, Option<String>, TType), SchemaError> {
        let program = &self.programs[pi].name;
        Ok(match rty {
            RType::Base(b) => match b {
                Base::Bool => (PType::Bool, None, TType::Bool),
                Base::Byte => (PType::Int32, None, TType::Byte),
                Base::I16 => (PType::Int32, None, TType::I16),
                Base::I32 => (PType::Int32, None, TType::I32),
                Base::I64 => (PType::Int64, None, TType::I64),
                Base::Double => (PType::Double, None, TType::Double),
                Base::String => (PType::String, None, TType::String),
                Base::Binary => (PType::Bytes, None, TType::Binary),
            },
            RType::Struct(full) => (PType::Message, Some(format!(".{full}")), TType::Struct),
            RType::Enum(full) => (PType::Enum, Some(format!(".{full}")), TType::Enum),
            RType::List(_) | RType::Set(_) | RType::Map(..) => {
                let full = format!("{program}.{path}");
                let (fd, tf) =
                    self.field(pi, file, path, "value", 1, Requiredness::Optional, rty)?;
                let ty = tf.ty;
                file.message_type.push(DescriptorProto {
                    name: Some(path.to_string()),
                    field: vec![fd],
                    ..Default::default()
                });
                self.pending.insert(
                    full.clone(),
                    Pending {
                        kind: ThriftKind::Wrapper,
                        fields: vec![tf],
                    },
                );
                (PType::Message, Some(format!(".{full}")), ty)
            }
        })
    }
}

fn invalid(element: &str, why: &str) -> SchemaError {
    SchemaError::Invalid {
        element: element.to_string(),
        why: why.to_string(),
    }
}

/// A scalar field's default as the descriptive schema holds it.
fn scalar_default(kind: crate::Kind, v: &ConstValue) -> Option<DefaultValue> {
    use crate::Kind;
    Some(match (kind, v) {
        (Kind::Bool, ConstValue::Int(n)) => DefaultValue::Bool(*n != 0),
        (Kind::Int32, ConstValue::Int(n)) => DefaultValue::I64(i64::from(i32::try_from(*n).ok()?)),
        (Kind::Int64, ConstValue::Int(n)) => DefaultValue::I64(*n),
        (Kind::Double, ConstValue::Int(n)) => DefaultValue::F64(*n as f64),
        (Kind::Double, ConstValue::Double(d)) => DefaultValue::F64(*d),
        (Kind::String, ConstValue::Str(s)) => DefaultValue::String(s.clone()),
        (Kind::Bytes, ConstValue::Str(s)) => DefaultValue::Bytes(s.clone().into_bytes()),
        (Kind::Enum, ConstValue::Int(n)) => DefaultValue::Enum(i32::try_from(*n).ok()?),
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
