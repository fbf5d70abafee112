//! The converter program: per source field path, a [`Rule`]; read from TOML or built in code.

use std::collections::BTreeMap;

use super::ConvertError;

/// A digest a `hash` rule computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashKind {
    /// SHA-256: 32 bytes, written as 64 lowercase hex digits to a string field.
    Sha256,
}

/// A constant in a rule (`redact`, `default`).
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// The target type's zero value (`redact = true`): 0, false, "", an empty message.
    Zero,
    /// `true` or `false`.
    Bool(bool),
    /// An integer (also for enum numbers and floating-point fields).
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// Text: a string, bytes (its UTF-8), or an enum value's name.
    Text(String),
}

/// What happens to one source field (and its values) on the way to the target.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rule {
    /// The target field's name (`--map`'s target, `rename`); by default the field of the same
    /// name. A dotted path must name a field of the target message the parent maps to.
    pub to: Option<String>,
    /// The field is not written.
    pub drop: bool,
    /// Every value is replaced by this constant.
    pub redact: Option<Literal>,
    /// Every string or bytes value is replaced by its digest.
    pub hash: Option<HashKind>,
    /// Every number is multiplied by this factor (rounded to the nearest integer for an
    /// integer target).
    pub scale: Option<f64>,
    /// Enum values by name: source value name → target value name; the others go by name.
    pub enum_values: Vec<(String, String)>,
    /// Written to the target field when the source leaves it unset.
    pub default: Option<Literal>,
}

impl Rule {
    /// Whether the rule changes values (not just where they go).
    pub(crate) fn transforms_values(&self) -> bool {
        self.redact.is_some() || self.hash.is_some() || self.scale.is_some()
    }
}

/// A converter program: rules keyed by source field path (`header.origin`), relative to the
/// root message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Program {
    /// The rules, by path.
    pub rules: BTreeMap<String, Rule>,
}

impl Program {
    /// An empty program: every field goes to the target field of the same name.
    pub fn new() -> Program {
        Program::default()
    }

    /// Adds (or replaces) the rule for `path`.
    pub fn rule(mut self, path: impl Into<String>, rule: Rule) -> Program {
        self.rules.insert(path.into(), rule);
        self
    }

    /// A `--map` file: a `[fields]` table of source field path → target field path.
    ///
    /// ```toml
    /// [fields]
    /// "service" = "service_name"
    /// "header.retry" = "header.retry_"
    /// ```
    ///
    /// # Errors
    /// [`ConvertError::Program`] naming `file` and what is wrong.
    pub fn from_map_toml(file: &str, text: &str) -> Result<Program, ConvertError> {
        from_fields(
            file,
            text,
            "a map file has `[fields]`",
            |target| match target {
                toml::Value::String(target) => Ok(Rule {
                    to: Some(target.clone()),
                    ..Rule::default()
                }),
                _ => Err("expected the target field path as a string".into()),
            },
        )
    }

    /// A `--transform` file: a table per source field path under `[fields]`, each with the
    /// ops to apply.
    ///
    /// ```toml
    /// [fields."header.origin"]
    /// hash = "sha256"
    /// [fields.latency_ns]
    /// rename = "latency_us"
    /// scale = 0.001
    /// [fields.status]
    /// enum = { ACTIVE = "ENABLED" }
    /// [fields.region]
    /// default = "eu-west-1"
    /// [fields.password]
    /// drop = true
    /// [fields.email]
    /// redact = "<redacted>"    # or `true`: the type's zero value
    /// ```
    ///
    /// # Errors
    /// [`ConvertError::Program`] naming `file`, the field and what is wrong.
    pub fn from_transform_toml(file: &str, text: &str) -> Result<Program, ConvertError> {
        let what = "a transform file has `[fields.\"PATH\"]` tables";
        from_fields(file, text, what, |ops| match ops {
            toml::Value::Table(ops) => rule_of(ops),
            _ => Err("expected a table of ops".into()),
        })
    }

    /// This program's rules with `other`'s added: a map and a transform together. A field
    /// both name gets the ops of both; naming its target twice, differently, is an error.
    ///
    /// # Errors
    /// [`ConvertError::Program`] for a conflict.
    pub fn merge(mut self, other: Program) -> Result<Program, ConvertError> {
        for (path, rule) in other.rules {
            let Some(mine) = self.rules.get_mut(&path) else {
                self.rules.insert(path, rule);
                continue;
            };
            let conflict = |what: &str| ConvertError::Program {
                file: "program".into(),
                why: format!("`{path}`: {what} given twice"),
            };
            merge_option(&mut mine.to, rule.to, || conflict("the target field"))?;
            merge_option(&mut mine.redact, rule.redact, || conflict("redact"))?;
            merge_option(&mut mine.hash, rule.hash, || conflict("hash"))?;
            merge_option(&mut mine.scale, rule.scale, || conflict("scale"))?;
            merge_option(&mut mine.default, rule.default, || conflict("default"))?;
            mine.drop |= rule.drop;
            mine.enum_values.extend(rule.enum_values);
        }
        Ok(self)
    }
}

fn merge_option<T: PartialEq>(
    mine: &mut Option<T>,
    theirs: Option<T>,
    conflict: impl Fn() -> ConvertError,
) -> Result<(), ConvertError> {
    match (mine.as_ref(), theirs) {
        (_, None) => Ok(()),
        (None, Some(t)) => {
            *mine = Some(t);
            Ok(())
        }
        (Some(m), Some(t)) if *m == t => Ok(()),
        _ => Err(conflict()),
    }
}

/// A program from a TOML file whose one table, `[fields]`, maps each source field path to an
/// entry that `rule` reads; `what` says what the file should hold.
fn from_fields(
    file: &str,
    text: &str,
    what: &str,
    rule: impl Fn(&toml::Value) -> Result<Rule, String>,
) -> Result<Program, ConvertError> {
    let bad = |why: String| ConvertError::Program {
        file: file.to_string(),
        why,
    };
    let mut program = Program::new();
    for (key, value) in parse(file, text)? {
        let toml::Value::Table(fields) = value else {
            return Err(bad(format!("`{key}` must be a table ({what})")));
        };
        if key != "fields" {
            return Err(bad(format!("unknown table `{key}` ({what})")));
        }
        for (path, entry) in fields {
            let r = rule(&entry).map_err(|why| bad(format!("fields.\"{path}\": {why}")))?;
            program.rules.insert(path, r);
        }
    }
    Ok(program)
}

fn parse(file: &str, text: &str) -> Result<toml::Table, ConvertError> {
    text.parse::<toml::Table>()
        .map_err(|e| ConvertError::Program {
            file: file.to_string(),
            why: e.to_string().trim_end().to_string(),
        })
}

/// The ops of one field's table.
fn rule_of(ops: &toml::Table) -> Result<Rule, String> {
    let mut rule = Rule::default();
    for (op, value) in ops {
        match op.as_str() {
            "rename" => match value {
                toml::Value::String(s) => rule.to = Some(s.clone()),
                _ => return Err("`rename` takes the new field name as a string".into()),
            },
            "drop" => match value {
                toml::Value::Boolean(b) => rule.drop = *b,
                _ => return Err("`drop` takes true or false".into()),
            },
            "redact" => {
                rule.redact = match value {
                    toml::Value::Boolean(true) => Some(Literal::Zero),
                    toml::Value::Boolean(false) => None,
                    v => Some(literal(v).ok_or("`redact` takes true or a constant")?),
                }
            }
            "hash" => match value {
                toml::Value::String(s) if s.eq_ignore_ascii_case("sha256") => {
                    rule.hash = Some(HashKind::Sha256)
                }
                _ => return Err("`hash` takes \"sha256\"".into()),
            },
            "scale" => {
                let factor = match value {
                    toml::Value::Float(f) => *f,
                    toml::Value::Integer(i) => *i as f64,
                    _ => return Err("`scale` takes a number".into()),
                };
                if !factor.is_finite() {
                    return Err("`scale` must be finite".into());
                }
                rule.scale = Some(factor);
            }
            "enum" => {
                let toml::Value::Table(pairs) = value else {
                    return Err("`enum` takes a table of source name = target name".into());
                };
                for (from, to) in pairs {
                    let toml::Value::String(to) = to else {
                        return Err(format!("`enum.{from}` takes the target value's name"));
                    };
                    rule.enum_values.push((from.clone(), to.clone()));
                }
            }
            "default" => {
                rule.default = Some(literal(value).ok_or("`default` takes a constant")?);
            }
            other => {
                return Err(format!(
                    "unknown op `{other}` (ops: rename, drop, redact, hash, scale, enum, default)"
                ))
            }
        }
    }
    if rule.drop && (rule.to.is_some() || rule.transforms_values() || rule.default.is_some()) {
        return Err("`drop` cannot be combined with other ops".into());
    }
    if rule.redact.is_some() && (rule.hash.is_some() || rule.scale.is_some()) {
        return Err("`redact` replaces the value: it cannot be combined with hash or scale".into());
    }
    if rule.hash.is_some() && rule.scale.is_some() {
        return Err("`hash` and `scale` apply to different types".into());
    }
    Ok(rule)
}

fn literal(v: &toml::Value) -> Option<Literal> {
    Some(match v {
        toml::Value::Boolean(b) => Literal::Bool(*b),
        toml::Value::Integer(i) => Literal::Int(*i),
        toml::Value::Float(f) => Literal::Float(*f),
        toml::Value::String(s) => Literal::Text(s.clone()),
        _ => return None,
    })
}
