//! Loading a [`SchemaSet`]: `.proto` files through protox, in-memory sources, or a
//! `FileDescriptorSet` that `protoc -o` wrote.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use prost::Message as _;
use prost_types::FileDescriptorSet;
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};

use crate::types::SchemaSet;
use crate::SchemaError;

/// The name under which [`SchemaSet::from_source`] compiles a lone source.
pub const DEFAULT_PROTO_NAME: &str = "input.proto";

impl SchemaSet {
    /// Compiles `.proto` files found through `includes` (like `protoc -I`). When `includes`
    /// is empty, each file's own directory is the include path. Google's well-known types
    /// (`google/protobuf/*.proto`) are always importable.
    ///
    /// # Errors
    /// [`SchemaError::Compile`] with protox's message (file, line and column) when a file
    /// does not parse, an import is missing, or a name does not resolve.
    pub fn from_proto_files(
        files: &[impl AsRef<Path>],
        includes: &[impl AsRef<Path>],
    ) -> Result<SchemaSet, SchemaError> {
        SchemaSet::from_descriptor_set(&descriptor_set_from_proto_files(files, includes)?)
    }

    /// Compiles in-memory `.proto` sources, given as `(import name, text)` pairs; they may
    /// import each other by those names and Google's well-known types. Every source is
    /// compiled.
    ///
    /// # Errors
    /// [`SchemaError::Compile`] when a source does not compile.
    pub fn from_sources(sources: &[(&str, &str)]) -> Result<SchemaSet, SchemaError> {
        SchemaSet::from_descriptor_set(&descriptor_set_from_sources(sources)?)
    }

    /// Compiles one in-memory `.proto` source named [`DEFAULT_PROTO_NAME`].
    ///
    /// # Errors
    /// [`SchemaError::Compile`] when the source does not compile.
    pub fn from_source(source: &str) -> Result<SchemaSet, SchemaError> {
        SchemaSet::from_sources(&[(DEFAULT_PROTO_NAME, source)])
    }

    /// Loads a serialized `FileDescriptorSet` (`protoc -o FILE --include_imports`).
    ///
    /// # Errors
    /// [`SchemaError::DescriptorSet`] when the bytes do not parse, [`SchemaError::Invalid`]
    /// when a referenced type is missing (write the set with `--include_imports`).
    /// Editions files (`edition = "2023"`, as protoc 27 and later write them) are resolved
    /// with their `features` options, read from the same bytes (prost-types lacks them).
    pub fn from_descriptor_set_bytes(bytes: &[u8]) -> Result<SchemaSet, SchemaError> {
        let set = FileDescriptorSet::decode(bytes)
            .map_err(|e| SchemaError::DescriptorSet(e.to_string()))?;
        let raw = crate::features::RawSet::decode(bytes)
            .map_err(|e| SchemaError::DescriptorSet(e.to_string()))?;
        crate::compile::compile_with(&with_well_known_types(&set)?, Some(&raw))
    }

    /// Reads and loads a descriptor set file.
    ///
    /// # Errors
    /// As [`SchemaSet::from_descriptor_set_bytes`], or [`SchemaError::Io`].
    pub fn from_descriptor_set_file(path: impl AsRef<Path>) -> Result<SchemaSet, SchemaError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| SchemaError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        SchemaSet::from_descriptor_set_bytes(&bytes)
    }

    /// Compiles decoded descriptors.
    ///
    /// prost-types 0.14 drops editions' `edition` and `features`: an editions file given
    /// this way gets edition 2023's defaults throughout. Load editions files from their
    /// bytes with [`SchemaSet::from_descriptor_set_bytes`] instead.
    ///
    /// # Errors
    /// [`SchemaError::Invalid`] when the descriptors are inconsistent.
    pub fn from_descriptor_set(set: &FileDescriptorSet) -> Result<SchemaSet, SchemaError> {
        crate::compile::compile(&with_well_known_types(set)?)
    }
}

/// The descriptors of `.proto` files found through `includes`, with their imports, as
/// [`SchemaSet::from_proto_files`] compiles them: for a consumer that needs the descriptors
/// themselves (another protobuf runtime fed the same schema).
///
/// # Errors
/// As [`SchemaSet::from_proto_files`].
pub fn descriptor_set_from_proto_files(
    files: &[impl AsRef<Path>],
    includes: &[impl AsRef<Path>],
) -> Result<FileDescriptorSet, SchemaError> {
    let mut dirs: Vec<PathBuf> = includes.iter().map(|p| p.as_ref().to_path_buf()).collect();
    if dirs.is_empty() {
        for f in files {
            let parent = f.as_ref().parent().unwrap_or(Path::new(""));
            let parent = if parent.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                parent.to_path_buf()
            };
            if !dirs.contains(&parent) {
                dirs.push(parent);
            }
        }
    }
    let found = files
        .iter()
        .map(|f| find_file(f.as_ref(), &dirs))
        .collect::<Result<Vec<_>, _>>()?;
    let mut compiler = protox::Compiler::new(&dirs).map_err(compile_error)?;
    compiler.include_imports(true);
    compiler.open_files(&found).map_err(|e| {
        editions_error(e, |name| {
            let given = found.iter().filter(|f| f.ends_with(name)).cloned();
            std::iter::once(PathBuf::from(name))
                .chain(given)
                .chain(dirs.iter().map(|d| d.join(name)))
                .find_map(|p| std::fs::read_to_string(p).ok())
        })
    })?;
    Ok(compiler.file_descriptor_set())
}

/// Where a schema file named `path` is, as protoc finds it: the path itself (from the working
/// directory, or absolute), else the first include directory that holds it.
///
/// # Errors
/// [`SchemaError::NotFound`] naming the file and every path tried.
pub(crate) fn find_file(path: &Path, includes: &[PathBuf]) -> Result<PathBuf, SchemaError> {
    if path.is_file() || path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    let mut tried = vec![path.to_path_buf()];
    for dir in includes {
        let candidate = dir.join(path);
        if candidate.is_file() {
            return Ok(candidate);
        }
        tried.push(candidate);
    }
    Err(SchemaError::NotFound {
        path: path.to_path_buf(),
        tried,
    })
}

/// The descriptors of in-memory `.proto` sources, as [`SchemaSet::from_sources`] compiles
/// them.
///
/// # Errors
/// As [`SchemaSet::from_sources`].
pub fn descriptor_set_from_sources(
    sources: &[(&str, &str)],
) -> Result<FileDescriptorSet, SchemaError> {
    let mut chain = ChainFileResolver::new();
    chain.add(MemoryResolver(
        sources
            .iter()
            .map(|(n, s)| (n.to_string(), s.to_string()))
            .collect(),
    ));
    chain.add(GoogleFileResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(chain);
    compiler.include_imports(true);
    for (name, _) in sources {
        compiler.open_file(name).map_err(|e| {
            editions_error(e, |file| {
                let found = sources.iter().find(|(n, _)| *n == file);
                found.map(|(_, text)| text.to_string())
            })
        })?;
    }
    Ok(compiler.file_descriptor_set())
}

/// The well-known types every schema carries, imported or not, so they can be named with
/// `--type` and resolved inside `Any` (as Google's runtimes always know them).
const WELL_KNOWN_FILES: &[&str] = &[
    "google/protobuf/any.proto",
    "google/protobuf/duration.proto",
    "google/protobuf/empty.proto",
    "google/protobuf/field_mask.proto",
    "google/protobuf/struct.proto",
    "google/protobuf/timestamp.proto",
    "google/protobuf/wrappers.proto",
];

/// `set` plus the well-known files it does not already hold.
fn with_well_known_types(set: &FileDescriptorSet) -> Result<FileDescriptorSet, SchemaError> {
    let mut set = set.clone();
    let resolver = GoogleFileResolver::new();
    for name in WELL_KNOWN_FILES {
        if !set.file.iter().any(|f| f.name() == *name) {
            let file = resolver.open_file(name).map_err(compile_error)?;
            set.file.push(file.file_descriptor_proto().clone());
        }
    }
    Ok(set)
}

fn compile_error(e: protox::Error) -> SchemaError {
    SchemaError::Compile(e.to_string())
}

/// protox's error, or, where the file it failed on declares an edition (which protox 0.9
/// cannot parse), an error that says so and how to load the file instead. `source` reads a
/// file by the name protox gives.
fn editions_error(e: protox::Error, source: impl Fn(&str) -> Option<String>) -> SchemaError {
    if let Some(file) = e.file() {
        if e.is_parse() && source(file).is_some_and(|s| crate::features::declares_edition(&s)) {
            return SchemaError::Compile(format!(
                "{file}: protobuf editions files (`edition = \"2023\"`) cannot be compiled from \
                 .proto text (protox 0.9 has no editions support); give it as a descriptor set \
                 instead: protoc --include_imports -o set.pb {file} (protoc 27 or later), then \
                 load set.pb (optimus: --descriptor-set set.pb) ({e})"
            ));
        }
    }
    compile_error(e)
}

/// Resolves imports from sources held in memory.
struct MemoryResolver(HashMap<String, String>);

impl FileResolver for MemoryResolver {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        match self.0.get(name) {
            Some(source) => File::from_source(name, source),
            None => Err(protox::Error::file_not_found(name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cardinality, Kind, WellKnown};

    const ZOO: &str = r#"
        syntax = "proto2";
        package zoo;
        import "google/protobuf/timestamp.proto";
        message A {
          optional int32 a_int = 1 [default = -7];
          repeated sint64 many = 3 [packed = true];
          repeated fixed32 loose = 4;
          map<string, A> children = 5;
          oneof choice { string s = 6; bytes b = 7 [default = "x\001"]; }
          optional group G = 8 { optional int32 gv = 9; }
          optional google.protobuf.Timestamp when = 10;
          optional E e = 11 [default = TWO];
          extensions 100 to 199;
          required string must = 2;
        }
        enum E { ONE = 1; TWO = 2; }
        extend A { optional string ext_name = 100; }
    "#;

    #[test]
    fn proto_files_are_found_through_include_dirs() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata");
        let s = SchemaSet::from_proto_files(&["peers.proto"], &["/nonexistent", dir]).unwrap();
        assert!(s.message_by_name("bench.Mixed").is_some());
        let e = SchemaSet::from_proto_files(&["gone.proto"], &["/a", "/b"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "gone.proto: not found (tried gone.proto, /a/gone.proto, /b/gone.proto)"
        );
    }

    #[test]
    fn proto2_zoo_compiles() {
        let s = SchemaSet::from_source(ZOO).unwrap();
        let a = s.message(s.message_by_name("zoo.A").unwrap());
        let numbers: Vec<u32> = a.fields.iter().map(|f| f.number).collect();
        assert_eq!(numbers, [1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 100]);
        assert_eq!(a.field_by_number(1).unwrap().json_name, "aInt");
        assert!(a.field_by_number(3).unwrap().is_packed);
        assert!(!a.field_by_number(4).unwrap().is_packed);
        assert_eq!(a.field_by_number(5).unwrap().cardinality, Cardinality::Map);
        assert_eq!(a.field_by_number(8).unwrap().kind, Kind::Group);
        assert!(a.field_by_number(2).unwrap().is_required);
        assert_eq!(a.oneofs.len(), 1);
        assert_eq!(a.oneofs[0].fields.len(), 2);
        let ext = a.field_by_number(100).unwrap();
        assert!(ext.is_extension);
        assert_eq!(ext.json_name, "[zoo.ext_name]");
        assert_eq!(a.field_by_name("[zoo.ext_name]").unwrap().number, 100);
        assert_eq!(
            a.field_by_number(7).unwrap().default,
            Some(crate::DefaultValue::Bytes(b"x\x01".to_vec()))
        );
        assert_eq!(
            a.field_by_number(11).unwrap().default,
            Some(crate::DefaultValue::Enum(2))
        );
        let e = s.enum_type(s.enum_by_name("zoo.E").unwrap());
        assert!(e.is_closed);
        assert!(a.may_lack_required);
        let g = s.message(s.message_by_name("zoo.A.G").unwrap());
        assert!(!g.may_lack_required);
        let ts = s.message(s.message_by_name("google.protobuf.Timestamp").unwrap());
        assert_eq!(ts.well_known, Some(WellKnown::Timestamp));
        assert!(a.field_index_by_number(9).is_none());
        assert!(a.field_index_by_number(5000).is_none());
    }

    #[test]
    fn proto3_presence_and_packing() {
        let s = SchemaSet::from_source(
            r#"syntax = "proto3";
               message M { int32 a = 1; optional int32 b = 2; repeated int32 c = 3;
                           repeated int32 d = 4 [packed = false]; M m = 5; int32 big = 100000; }
               service S { rpc Call(M) returns (M); }"#,
        )
        .unwrap();
        let m = s.message(s.message_by_name(".M").unwrap());
        assert_eq!(
            m.field_by_number(1).unwrap().cardinality,
            Cardinality::Singular
        );
        assert_eq!(
            m.field_by_number(2).unwrap().cardinality,
            Cardinality::Optional
        );
        assert!(m.field_by_number(2).unwrap().oneof.is_none());
        assert!(m.field_by_number(3).unwrap().is_packed);
        assert!(!m.field_by_number(4).unwrap().is_packed);
        assert_eq!(
            m.field_by_number(5).unwrap().cardinality,
            Cardinality::Optional
        );
        assert_eq!(m.field_by_number(100000).unwrap().name, "big");
        assert_eq!(s.services()[0].methods[0].name, "Call");
    }

    #[test]
    fn well_known_types_are_always_known() {
        let s = SchemaSet::from_source("syntax = \"proto3\"; message M {}").unwrap();
        for name in [
            "google.protobuf.Duration",
            "google.protobuf.Struct",
            "google.protobuf.Any",
        ] {
            assert!(s.message_by_name(name).is_some(), "{name}");
        }
    }

    #[test]
    fn compile_errors_are_reported() {
        let e = SchemaSet::from_source("message M { int32 a = 1 }").unwrap_err();
        assert!(matches!(e, SchemaError::Compile(_)), "{e}");
        assert!(SchemaSet::from_descriptor_set_bytes(b"\xff\xff").is_err());
    }

    #[test]
    fn names_found_from_a_hint_as_without_one() {
        let s = SchemaSet::from_source(
            "syntax = \"proto2\"; message M { optional int32 foo_bar = 1; optional int32 b = 2; }",
        )
        .unwrap();
        let m = s.message(s.message_by_name("M").unwrap());
        for name in ["foo_bar", "fooBar", "b", "nope"] {
            for hint in 0..4 {
                let found = m.field_index_by_name_from(name, hint);
                assert_eq!(found, m.field_index_by_name(name), "{name} from {hint}");
            }
        }
        // Where one name belongs to two fields (protox refuses such a source; a descriptor
        // set may still hold it), the hint never overrides the table.
        use prost_types::field_descriptor_proto::{Label, Type};
        use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};
        let field = |name: &str, number| FieldDescriptorProto {
            name: Some(name.into()),
            number: Some(number),
            label: Some(Label::Optional as i32),
            r#type: Some(Type::Int32 as i32),
            json_name: Some("fooBar".into()),
            ..Default::default()
        };
        let set = FileDescriptorSet {
            file: vec![FileDescriptorProto {
                name: Some("m.proto".into()),
                syntax: Some("proto2".into()),
                message_type: vec![DescriptorProto {
                    name: Some("M".into()),
                    field: vec![field("fooBar", 1), field("foo_bar", 2)],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        let s = SchemaSet::from_descriptor_set(&set).unwrap();
        let m = s.message(s.message_by_name("M").unwrap());
        assert_eq!(m.field_index_by_name("fooBar"), Some(1));
        for hint in 0..3 {
            assert_eq!(
                m.field_index_by_name_from("fooBar", hint),
                Some(1),
                "from {hint}"
            );
        }
    }
}
