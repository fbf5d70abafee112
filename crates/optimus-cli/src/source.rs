//! Where a command's schema comes from: `--proto FILE -I DIR`, `--descriptor-set FILE` or
//! `--thrift FILE -I DIR`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use optimus_schema::{MessageId, SchemaSet};

/// Schema source flags shared by every command that needs a schema.
#[derive(Args, Debug, Clone)]
pub struct SchemaSource {
    /// A .proto file to compile (repeatable): as given, else under each -I; its imports are
    /// found through -I.
    #[arg(
        long = "proto",
        value_name = "FILE",
        required_unless_present_any = ["descriptor_set", "thrift"],
        conflicts_with = "descriptor_set"
    )]
    pub proto: Vec<PathBuf>,
    /// An include directory for imports (repeatable, like protoc -I); default: each
    /// file's own directory.
    #[arg(short = 'I', long = "include", value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// A FileDescriptorSet written by `protoc -o FILE --include_imports`.
    #[arg(long = "descriptor-set", value_name = "FILE")]
    pub descriptor_set: Option<PathBuf>,
    /// A .thrift file to load (repeatable); its includes are found beside it, then through -I.
    #[arg(long = "thrift", value_name = "FILE", conflicts_with_all = ["proto", "descriptor_set"])]
    pub thrift: Vec<PathBuf>,
}

impl SchemaSource {
    /// Loads the schema.
    pub fn load(&self) -> Result<SchemaSet> {
        if !self.thrift.is_empty() {
            return Ok(SchemaSet::from_thrift_files(&self.thrift, &self.include)?);
        }
        match &self.descriptor_set {
            Some(path) => SchemaSet::from_descriptor_set_file(path)
                .with_context(|| format!("loading {}", path.display())),
            None => Ok(SchemaSet::from_proto_files(&self.proto, &self.include)?),
        }
    }
}

/// Finds a message type by its fully qualified name (for a Thrift schema, also by its bare
/// struct name), with a helpful error.
pub fn find_type(schema: &SchemaSet, name: &str) -> Result<MessageId> {
    let found = if schema.thrift().is_some() {
        schema.thrift_struct_by_name(name)
    } else {
        schema.message_by_name(name)
    };
    if let Some(id) = found {
        return Ok(id);
    }
    let suggestions: Vec<&str> = schema
        .messages()
        .filter(|(_, m)| m.name() == name || m.full_name.ends_with(&format!(".{name}")))
        .map(|(_, m)| m.full_name.as_str())
        .collect();
    if suggestions.is_empty() {
        anyhow::bail!("no message type {name} in the schema")
    }
    anyhow::bail!(
        "no message type {name} in the schema (did you mean {}?)",
        suggestions.join(" or ")
    )
}
