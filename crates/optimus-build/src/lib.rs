//! optimus-build: typed Rust views over optimus's arena records, generated from `.proto`
//! files by a `build.rs` helper (protox compiles them: no `protoc`).
//!
//! ```text
//! // build.rs
//! fn main() {
//!     optimus_build::compile_protos(&["proto/bench.proto"], &["proto"]).unwrap();
//! }
//! // src/lib.rs
//! pub mod bench {
//!     include!(concat!(env!("OUT_DIR"), "/bench.rs"));
//! }
//! use optimus_build::GeneratedMessage as _;
//! let arena = optimus_build::Arena::new();
//! let flat = bench::Flat::decode(&bytes, &arena)?;
//! println!("{} {}", flat.name(), flat.i32_tiny());
//! ```
//!
//! Each message becomes `pub struct Name<'a>`, a view of a [`Record`] whose memory layout is
//! the type's op table's: getters read a slot at an offset the generator computed with the
//! same table builder the runtime runs, and the generated module checks once, when it loads
//! its schema, that the runtime's tables have those offsets (it panics naming the first
//! difference otherwise). Encoding and decoding are the engine's walkers, so a generated
//! message and a dynamic [`Record`] give the same bytes. docs/generated.md has the details.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "tonic")]
pub mod codec;
mod codegen;
pub mod runtime;

use std::path::{Path, PathBuf};

pub use optimus_core::binary::DecodeOptions;
pub use optimus_core::engine::Encoder;
pub use optimus_core::json::JsonOptions;
pub use optimus_core::schema::{MessageId, SchemaSet};
pub use optimus_core::{Arena, Error, FieldRef, Record};
pub use runtime::{EnumValue, Enumeration, GeneratedMessage, MapIter, Repeated};

/// Errors of code generation.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// The `.proto` files did not compile (protox's message: file, line, column).
    Schema(optimus_core::schema::SchemaError),
    /// Writing the generated file failed.
    Io(PathBuf, std::io::Error),
    /// `OUT_DIR` is not set (not running in a build script) and no output directory was given.
    NoOutDir,
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::Schema(e) => write!(f, "{e}"),
            BuildError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            BuildError::NoOutDir => write!(f, "OUT_DIR is not set and no out_dir was given"),
        }
    }
}

impl std::error::Error for BuildError {}

/// Compiles `protos` (found through `includes`, like `protoc -I`; each file's own directory
/// when empty) and writes one `<package>.rs` per package into `$OUT_DIR`, with types for the
/// messages and enums those files declare (imports are compiled but not generated). Tells
/// cargo to rerun when a `.proto` changes.
///
/// # Errors
/// [`BuildError`]: a file that does not compile, an unwritable output, no `OUT_DIR`.
pub fn compile_protos(
    protos: &[impl AsRef<Path>],
    includes: &[impl AsRef<Path>],
) -> Result<(), BuildError> {
    Config::new().compile_protos(protos, includes).map(|_| ())
}

/// Code generation options.
#[derive(Debug, Clone, Default)]
pub struct Config {
    out_dir: Option<PathBuf>,
    copy_check: bool,
}

impl Config {
    /// The defaults: write into `$OUT_DIR`.
    pub fn new() -> Config {
        Config::default()
    }

    /// Writes the generated files into `dir` instead of `$OUT_DIR`.
    pub fn out_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Config {
        self.out_dir = Some(dir.into());
        self
    }

    /// Also emits a hidden `__copy_to(&self, dst)` per message that copies every field
    /// through the typed getters and setters: for tests that hold the accessors to the
    /// tables (a copy must encode as the original does). Off by default.
    pub fn copy_check(&mut self, on: bool) -> &mut Config {
        self.copy_check = on;
        self
    }

    /// As [`compile_protos`], with these options. Returns the files written.
    ///
    /// # Errors
    /// As [`compile_protos`].
    pub fn compile_protos(
        &self,
        protos: &[impl AsRef<Path>],
        includes: &[impl AsRef<Path>],
    ) -> Result<Vec<PathBuf>, BuildError> {
        let out_dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => std::env::var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or(BuildError::NoOutDir)?,
        };
        let set = optimus_core::schema::descriptor_set_from_proto_files(protos, includes)
            .map_err(BuildError::Schema)?;
        let wanted: Vec<String> = protos
            .iter()
            .map(|p| proto_name(p.as_ref(), includes))
            .collect();
        let files =
            codegen::generate(&set, &wanted, self.copy_check).map_err(BuildError::Schema)?;
        let mut written = Vec::new();
        for (name, text) in files {
            let path = out_dir.join(name);
            std::fs::write(&path, text).map_err(|e| BuildError::Io(path.clone(), e))?;
            written.push(path);
        }
        for p in protos {
            println!("cargo:rerun-if-changed={}", p.as_ref().display());
        }
        Ok(written)
    }
}

/// The name a file has in the descriptor set: its path relative to the include directory it
/// was found under (its file name when no include holds it).
fn proto_name(path: &Path, includes: &[impl AsRef<Path>]) -> String {
    let rel = includes
        .iter()
        .find_map(|i| path.strip_prefix(i.as_ref()).ok())
        .or_else(|| path.file_name().map(Path::new))
        .unwrap_or(path);
    rel.to_string_lossy().replace('\\', "/")
}
