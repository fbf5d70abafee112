//! Compiling a [`Program`] against two message types into a [`Plan`]: per source entry of
//! each message type pair, an [`Action`]; per target entry, at most one writer.

use std::collections::HashMap;

use optimus_schema::thrift::TType;
use optimus_schema::{EnumId, Field, MessageId, Scalar, SchemaSet, Shape};

use super::program::{HashKind, Literal, Program, Rule};
use super::ConvertError;

/// A compiled converter: copies records of one message type into records of another,
/// converting values as its [`Program`] says. Compiled once, applied per message
/// ([`Plan::apply`]).
pub struct Plan<'s> {
    pub(super) src: &'s SchemaSet,
    pub(super) dst: &'s SchemaSet,
    pub(super) root: usize,
    pub(super) nodes: Vec<Node>,
}

impl std::fmt::Debug for Plan<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field(
                "from",
                &self.src.message(self.nodes[self.root].src).full_name,
            )
            .field("to", &self.dst.message(self.nodes[self.root].dst).full_name)
            .field("nodes", &self.nodes.len())
            .finish()
    }
}

/// The plan of one (source type, target type) pair at one place in the tree.
pub(super) struct Node {
    pub(super) src: MessageId,
    pub(super) dst: MessageId,
    /// One per source entry.
    pub(super) actions: Vec<Action>,
    /// Constants for target entries the source left unset.
    pub(super) defaults: Vec<(usize, Value)>,
    /// Same type in the same schema: unknown fields are kept.
    pub(super) keep_unknown: bool,
}

/// What happens to one source field.
pub(super) enum Action {
    /// Not written.
    Drop,
    /// Each value converted and written to target entry `dst`.
    Copy { dst: usize, op: ValueOp },
    /// A single field whose value keeps its bits: the slot is copied as it is (`width` bytes
    /// from `from` to `to`) and the target presence bit set, the source's set bit already
    /// meaning the target's (the target has explicit presence, or neither has). The same
    /// type, or integers of one width (their two's complement bits are the value, or the
    /// value kept by its bits across signedness).
    Slot {
        dst: usize,
        from: u32,
        to: u32,
        width: u32,
        how: SlotCopy,
    },
    /// A single message field (not in a oneof) through node `child`: a new target record
    /// built from the source's, its pointer stored at `to`.
    Message {
        dst: usize,
        from: u32,
        to: u32,
        child: usize,
    },
}

/// How an [`Action::Slot`] moves the bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SlotCopy {
    /// As they are.
    Bits,
    /// A 32-bit integer to a 64-bit one, sign-extended when `signed`.
    Widen { signed: bool },
    /// A `float` to a `double`.
    FloatToDouble,
}

/// How one value becomes a target value.
pub(super) enum ValueOp {
    /// The same scalar type: the slot's bytes as they are (strings and bytes viewed).
    Same,
    /// A number to a number: by value, scaled first if `scale`; `wrap` when a value that does
    /// not fit keeps its bits (same width, other signedness, as Thrift carries uint64 in i64);
    /// `range` narrows further (Thrift `byte`, `i16`).
    Number {
        scale: Option<f64>,
        wrap: bool,
        range: Option<(i64, i64)>,
    },
    /// An enum value to another enum's: by number, through the table; numbers missing from it
    /// have no counterpart.
    Enum(HashMap<i32, i32>),
    /// An enum value to its name.
    EnumName(EnumId),
    /// A name to an enum value (renames applied first).
    NameEnum(EnumId, HashMap<String, String>),
    /// Text to text: a string to bytes, or bytes to a string (checked UTF-8).
    Text { check_utf8: bool },
    /// A digest of the bytes; `hex` for a string target.
    Hash { kind: HashKind, hex: bool },
    /// A constant in place of every value.
    Const(Value),
    /// A message (or map entry) through node `usize`.
    Message(usize),
}

/// A constant in the target field's representation.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    /// A scalar's slot bits (little-endian, the slot's width).
    Bits(u64),
    /// A string's or bytes' content.
    Bytes(Vec<u8>),
    /// An empty message.
    EmptyMessage,
}

/// The rules below one node: `(remaining path segments, rule, full path as written)`.
type Rules<'p> = Vec<(Vec<&'p str>, &'p Rule, &'p str)>;

struct Compiler<'s> {
    src: &'s SchemaSet,
    dst: &'s SchemaSet,
    nodes: Vec<Node>,
    /// Nodes without rules below them, shared by every place their pair occurs.
    plain: HashMap<(MessageId, MessageId), usize>,
}

impl<'s> Plan<'s> {
    /// Compiles `program` for records of type `from` in `src` going to type `to` in `dst`
    /// (the same schema and type for a transform in place).
    ///
    /// # Errors
    /// [`ConvertError::Compile`] naming the source path: a rule naming no field, a field
    /// with no target of that name (map it or drop it), types that cannot convert, an op that
    /// does not apply to the field's type.
    pub fn compile(
        src: &'s SchemaSet,
        from: MessageId,
        dst: &'s SchemaSet,
        to: MessageId,
        program: &Program,
    ) -> Result<Plan<'s>, ConvertError> {
        let rules: Rules<'_> = program
            .rules
            .iter()
            .map(|(path, rule)| (path.split('.').collect(), rule, path.as_str()))
            .collect();
        let mut c = Compiler {
            src,
            dst,
            nodes: Vec::new(),
            plain: HashMap::new(),
        };
        let root_name = src.message(from).name().to_string();
        let root = c.node(from, to, rules, &root_name, "")?;
        Ok(Plan {
            src,
            dst,
            root,
            nodes: c.nodes,
        })
    }

    /// The source schema.
    pub fn source_schema(&self) -> &'s SchemaSet {
        self.src
    }

    /// The target schema.
    pub fn target_schema(&self) -> &'s SchemaSet {
        self.dst
    }

    /// The source message type.
    pub fn source_type(&self) -> MessageId {
        self.nodes[self.root].src
    }

    /// The target message type.
    pub fn target_type(&self) -> MessageId {
        self.nodes[self.root].dst
    }
}

impl Compiler<'_> {
    /// The node for `src_id` → `dst_id` with `rules` below it; `path` names the source
    /// message for errors, `dst_path` the target's (from the root, dotted; empty at the root).
    fn node(
        &mut self,
        src_id: MessageId,
        dst_id: MessageId,
        rules: Rules<'_>,
        path: &str,
        dst_path: &str,
    ) -> Result<usize, ConvertError> {
        if rules.is_empty() {
            if let Some(&n) = self.plain.get(&(src_id, dst_id)) {
                return Ok(n);
            }
        }
        let index = self.nodes.len();
        self.nodes.push(Node {
            src: src_id,
            dst: dst_id,
            actions: Vec::new(),
            defaults: Vec::new(),
            keep_unknown: false,
        });
        if rules.is_empty() {
            self.plain.insert((src_id, dst_id), index);
        }
        let (src, dst) = (self.src, self.dst);
        let sty = src.message(src_id);
        let dty = dst.message(dst_id);
        let same_type = std::ptr::eq(src, dst) && src_id == dst_id;
        for (first, _, full) in &rules {
            if !sty.fields.iter().any(|f| f.name == first[0]) {
                return Err(compile_error(
                    format!("{path}.{}", first[0]),
                    format!(
                        "no field `{}` in {} (rule `{full}`)",
                        first[0], sty.full_name
                    ),
                ));
            }
        }
        // Explicit targets first: a field renamed onto another's name takes it over, and the
        // field that name would have gone to must then be dropped or sent elsewhere.
        let mut written: Vec<Option<String>> = vec![None; dty.fields.len()];
        let mut explicit: Vec<Option<String>> = vec![None; dty.fields.len()];
        for sf in &sty.fields {
            let to = rules
                .iter()
                .find(|(segments, rule, _)| {
                    segments.len() == 1 && segments[0] == sf.name && !rule.drop
                })
                .and_then(|(_, rule, _)| rule.to.as_deref());
            if let Some(to) = to {
                let name = target_field_name(to, dst_path, &format!("{path}.{}", sf.name))?;
                if let Some(j) = dty.fields.iter().position(|f| f.name == name) {
                    explicit[j].get_or_insert_with(|| sf.name.clone());
                }
            }
        }
        let mut unmatched = Vec::new();
        let mut actions = Vec::with_capacity(sty.fields.len());
        let mut defaults = Vec::new();
        for (i, sf) in sty.fields.iter().enumerate() {
            let fpath = format!("{path}.{}", sf.name);
            let mut below: Rules<'_> = Vec::new();
            let mut own: Option<&Rule> = None;
            for (segments, rule, full) in &rules {
                if segments[0] != sf.name {
                    continue;
                }
                if segments.len() == 1 {
                    own = Some(rule);
                } else {
                    below.push((segments[1..].to_vec(), rule, full));
                }
            }
            let rule = own.cloned().unwrap_or_default();
            if rule.drop {
                actions.push(Action::Drop);
                continue;
            }
            let target_name = match &rule.to {
                Some(to) => target_field_name(to, dst_path, &fpath)?,
                None => sf.name.clone(),
            };
            let Some(j) = dty.fields.iter().position(|f| f.name == target_name) else {
                if rule.to.is_some() || !below.is_empty() || rule != Rule::default() {
                    return Err(compile_error(
                        fpath,
                        format!("no field `{target_name}` in target type {}", dty.full_name),
                    ));
                }
                unmatched.push(sf.name.clone());
                actions.push(Action::Drop);
                continue;
            };
            if let Some(other) = explicit[j].as_ref().filter(|o| **o != sf.name) {
                return Err(compile_error(
                    fpath,
                    format!(
                        "target field {}.{target_name} is taken by `{other}` (renamed onto it): drop `{}` or give it another target",
                        dty.full_name, sf.name
                    ),
                ));
            }
            if let Some(other) = &written[j] {
                return Err(compile_error(
                    fpath,
                    format!(
                        "target field {}.{target_name} is already written from `{other}`",
                        dty.full_name
                    ),
                ));
            }
            written[j] = Some(sf.name.clone());
            let df = &dty.fields[j];
            let sub_dst_path = if dst_path.is_empty() {
                df.name.clone()
            } else {
                format!("{dst_path}.{}", df.name)
            };
            let op = self.value_op(src_id, i, dst_id, j, &rule, below, &fpath, &sub_dst_path)?;
            if let Some(lit) = &rule.default {
                let de = &dty.table.entries[j];
                if de.op.shape() != Shape::Single || de.op.scalar().is_message() {
                    return Err(compile_error(
                        fpath,
                        "`default` applies to a single scalar, string or bytes field".into(),
                    ));
                }
                defaults.push((j, self.constant(lit, dst_id, j, &fpath)?));
            }
            let (se, de) = (&sty.table.entries[i], &dty.table.entries[j]);
            let presence_kept = se.op.shape() == Shape::Single
                && !de.in_oneof()
                && (de.has_presence() || !se.has_presence());
            actions.push(match slot_copy(&op, se.op.scalar(), de.op.scalar()) {
                _ if presence_kept && de.op.scalar() == Scalar::Message => match op {
                    ValueOp::Message(child) => Action::Message {
                        dst: j,
                        from: se.offset,
                        to: de.offset,
                        child,
                    },
                    op => Action::Copy { dst: j, op },
                },
                Some(how) if presence_kept => Action::Slot {
                    dst: j,
                    from: se.offset,
                    to: de.offset,
                    width: de.op.slot_width(),
                    how,
                },
                _ => Action::Copy { dst: j, op },
            });
        }
        if !unmatched.is_empty() && !same_type {
            return Err(compile_error(
                path.to_string(),
                format!(
                    "no field of that name in target type {} for {}: map each (--map) or drop it (--transform)",
                    dty.full_name,
                    unmatched
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        let node = &mut self.nodes[index];
        node.actions = actions;
        node.defaults = defaults;
        node.keep_unknown = same_type;
        Ok(index)
    }

    /// The conversion of source field `i` of `src_id` into target field `j` of `dst_id`.
    #[allow(clippy::too_many_arguments)]
    fn value_op(
        &mut self,
        src_id: MessageId,
        i: usize,
        dst_id: MessageId,
        j: usize,
        rule: &Rule,
        below: Rules<'_>,
        fpath: &str,
        dst_path: &str,
    ) -> Result<ValueOp, ConvertError> {
        let (src, dst) = (self.src, self.dst);
        let (sty, dty) = (src.message(src_id), dst.message(dst_id));
        let (sf, df) = (&sty.fields[i], &dty.fields[j]);
        let (se, de) = (&sty.table.entries[i], &dty.table.entries[j]);
        let (ss, ds) = (se.op.scalar(), de.op.scalar());
        let err = |why: String| Err(compile_error(fpath.to_string(), why));
        let describe = |f: &Field, schema: &SchemaSet| describe_field(f, schema);
        let shapes_match = match (se.op.shape(), de.op.shape()) {
            (Shape::Single, Shape::Single) | (Shape::Map, Shape::Map) => true,
            (a, b) => a != Shape::Map && b != Shape::Map && a.is_sequence() == b.is_sequence(),
        };
        if !shapes_match {
            return err(format!(
                "a {} cannot convert to {}.{}, a {}",
                describe(sf, src),
                dty.full_name,
                df.name,
                describe(df, dst)
            ));
        }
        if ss.is_message() || ds.is_message() {
            if !(ss.is_message() && ds.is_message()) {
                return err(format!(
                    "a {} cannot convert to {}.{}, a {}",
                    describe(sf, src),
                    dty.full_name,
                    df.name,
                    describe(df, dst)
                ));
            }
            if let Some(lit) = &rule.redact {
                if *lit != Literal::Zero {
                    return err("a message can only be redacted to empty (`redact = true`)".into());
                }
                return Ok(ValueOp::Const(Value::EmptyMessage));
            }
            if rule.hash.is_some() || rule.scale.is_some() || !rule.enum_values.is_empty() {
                return err("hash, scale and enum apply to scalar fields, not messages".into());
            }
            let child = self.node(
                MessageId(sty.table.sub_message(se)),
                MessageId(dty.table.sub_message(de)),
                below,
                fpath,
                dst_path,
            )?;
            return Ok(ValueOp::Message(child));
        }
        if let Some((segments, _, full)) = below.first() {
            return err(format!(
                "rule `{full}`: `{}` is not a message, it has no field `{}`",
                sf.name, segments[0]
            ));
        }
        if let Some(lit) = &rule.redact {
            return Ok(ValueOp::Const(self.constant(lit, dst_id, j, fpath)?));
        }
        if let Some(kind) = rule.hash {
            if !ss.is_bytes_like() || !ds.is_bytes_like() {
                return err(format!(
                    "`hash` takes a string or bytes field to a string or bytes field, not a {} to a {}",
                    describe(sf, src),
                    describe(df, dst)
                ));
            }
            return Ok(ValueOp::Hash {
                kind,
                hex: ds == Scalar::String,
            });
        }
        let is_enum = |s: Scalar| matches!(s, Scalar::OpenEnum | Scalar::ClosedEnum);
        if !rule.enum_values.is_empty() && !is_enum(ss) {
            return err("`enum` applies to enum fields".into());
        }
        if rule.scale.is_some() && !(is_number(ss) && is_number(ds)) {
            return err(format!(
                "`scale` takes a number to a number, not a {} to a {}",
                describe(sf, src),
                describe(df, dst)
            ));
        }
        let same_schema = std::ptr::eq(src, dst);
        if is_enum(ss) && is_enum(ds) {
            let (se_id, de_id) = (sf.enum_type.expect("enum"), df.enum_type.expect("enum"));
            if same_schema && se_id == de_id && rule.enum_values.is_empty() {
                return Ok(ValueOp::Same);
            }
            return Ok(ValueOp::Enum(self.enum_table(se_id, de_id, rule, fpath)?));
        }
        if is_enum(ss) && ds == Scalar::String {
            return Ok(ValueOp::EnumName(sf.enum_type.expect("enum")));
        }
        if ss == Scalar::String && is_enum(ds) {
            let renames = rule.enum_values.iter().cloned().collect();
            return Ok(ValueOp::NameEnum(df.enum_type.expect("enum"), renames));
        }
        if ss == ds && rule.scale.is_none() && narrow_range(dst, dst_id, j).is_none() {
            return Ok(ValueOp::Same);
        }
        if ss.is_bytes_like() && ds.is_bytes_like() {
            return Ok(ValueOp::Text {
                check_utf8: ds == Scalar::String,
            });
        }
        let numeric = |s: Scalar| is_number(s) || is_enum(s);
        let int_like = |s: Scalar| is_integer(s) || is_enum(s);
        // A float goes to an integer only scaled (then rounded): never silently truncated.
        let lossy = is_float(ss) && int_like(ds) && rule.scale.is_none();
        if numeric(ss) && numeric(ds) && !lossy {
            let wrap = is_integer(ss)
                && is_integer(ds)
                && ss.width() == ds.width()
                && is_signed(ss) != is_signed(ds);
            return Ok(ValueOp::Number {
                scale: rule.scale,
                wrap,
                range: narrow_range(dst, dst_id, j),
            });
        }
        err(format!(
            "a {} cannot convert to {}.{}, a {}{}",
            describe(sf, src),
            dty.full_name,
            df.name,
            describe(df, dst),
            if lossy {
                " (scale it to convert, e.g. `scale = 1`)"
            } else {
                ""
            }
        ))
    }

    /// Source enum numbers → target numbers, by name (renames first).
    fn enum_table(
        &self,
        from: EnumId,
        to: EnumId,
        rule: &Rule,
        fpath: &str,
    ) -> Result<HashMap<i32, i32>, ConvertError> {
        let (se, de) = (self.src.enum_type(from), self.dst.enum_type(to));
        for (name, target) in &rule.enum_values {
            if se.value_by_name(name).is_none() {
                return Err(compile_error(
                    fpath.to_string(),
                    format!("`enum`: {} has no value `{name}`", se.full_name),
                ));
            }
            if de.value_by_name(target).is_none() {
                return Err(compile_error(
                    fpath.to_string(),
                    format!("`enum`: {} has no value `{target}`", de.full_name),
                ));
            }
        }
        let mut table = HashMap::new();
        for v in &se.values {
            let name = rule
                .enum_values
                .iter()
                .find(|(from, _)| *from == v.name)
                .map_or(v.name.as_str(), |(_, to)| to.as_str());
            if let Some(t) = de.value_by_name(name) {
                table.entry(v.number).or_insert(t.number);
            }
        }
        Ok(table)
    }

    /// `lit` as a value of target field `j` of `dst_id`.
    fn constant(
        &self,
        lit: &Literal,
        dst_id: MessageId,
        j: usize,
        fpath: &str,
    ) -> Result<Value, ConvertError> {
        let dty = self.dst.message(dst_id);
        let (df, de) = (&dty.fields[j], &dty.table.entries[j]);
        let scalar = de.op.scalar();
        let bad = || {
            compile_error(
                fpath.to_string(),
                format!(
                    "the constant {lit:?} is not a value of {}.{}, a {}",
                    dty.full_name,
                    df.name,
                    describe_field(df, self.dst)
                ),
            )
        };
        if scalar.is_message() {
            return match lit {
                Literal::Zero => Ok(Value::EmptyMessage),
                _ => Err(bad()),
            };
        }
        if scalar.is_bytes_like() {
            return match lit {
                Literal::Zero => Ok(Value::Bytes(Vec::new())),
                Literal::Text(s) => Ok(Value::Bytes(s.as_bytes().to_vec())),
                _ => Err(bad()),
            };
        }
        let number = match lit {
            Literal::Zero => return Ok(Value::Bits(0)),
            Literal::Bool(b) if scalar == Scalar::Bool => return Ok(Value::Bits(u64::from(*b))),
            Literal::Text(name) if matches!(scalar, Scalar::OpenEnum | Scalar::ClosedEnum) => {
                let en = self.dst.enum_type(df.enum_type.expect("enum"));
                let v = en.value_by_name(name).ok_or_else(bad)?;
                return Ok(Value::Bits(u64::from(v.number as u32)));
            }
            Literal::Int(i) => Number::Int(i128::from(*i)),
            Literal::Float(f) => Number::Float(*f),
            _ => return Err(bad()),
        };
        if matches!(number, Number::Float(_)) && !is_float(scalar) {
            return Err(bad());
        }
        number
            .to_bits(scalar, false, narrow_range(self.dst, dst_id, j))
            .map(Value::Bits)
            .map_err(|_| bad())
    }
}

/// A number read from a slot, before it becomes another type's.
#[derive(Debug, Clone, Copy)]
pub(super) enum Number {
    Int(i128),
    Float(f64),
}

impl Number {
    /// The slot bits of `self` as a value of `scalar`. `wrap`: an integer that does not fit
    /// keeps its low bits (same width, other signedness). `range` narrows an integer target.
    pub(super) fn to_bits(
        self,
        scalar: Scalar,
        wrap: bool,
        range: Option<(i64, i64)>,
    ) -> Result<u64, String> {
        if is_float(scalar) {
            let f = match self {
                Number::Int(i) => i as f64,
                Number::Float(f) => f,
            };
            return Ok(if scalar == Scalar::Float {
                if f.is_finite() && f.abs() > f64::from(f32::MAX) {
                    return Err(format!("{f} is out of range for a float"));
                }
                u64::from((f as f32).to_bits())
            } else {
                f.to_bits()
            });
        }
        let i = match self {
            Number::Int(i) => i,
            Number::Float(f) => {
                let r = f.round();
                if !r.is_finite() || r.abs() > 1.9e19 {
                    return Err(format!("{f} is out of range for an integer"));
                }
                r as i128
            }
        };
        let (lo, hi): (i128, i128) = match range {
            Some((lo, hi)) => (lo.into(), hi.into()),
            None => match (scalar.width(), is_signed(scalar)) {
                (4, true) => (i32::MIN.into(), i32::MAX.into()),
                (4, false) => (0, u32::MAX.into()),
                (_, true) => (i64::MIN.into(), i64::MAX.into()),
                (_, false) => (0, u64::MAX.into()),
            },
        };
        if i < lo || i > hi {
            let fits_bits = wrap
                && range.is_none()
                && if scalar.width() == 4 {
                    i >= i32::MIN.into() && i <= u32::MAX.into()
                } else {
                    i >= i64::MIN.into() && i <= u64::MAX.into()
                };
            if !fits_bits {
                return Err(format!("{i} is out of range for the target field"));
            }
        }
        Ok(if scalar.width() == 4 {
            u64::from(i as u32)
        } else {
            i as u64
        })
    }
}

/// Whether `op` from scalar `from` to scalar `to` is a copy of bits, and how.
fn slot_copy(op: &ValueOp, from: Scalar, to: Scalar) -> Option<SlotCopy> {
    match op {
        ValueOp::Same => Some(SlotCopy::Bits),
        ValueOp::Number {
            scale: None,
            range: None,
            ..
        } if is_integer(from) && is_integer(to) => match (from.width(), to.width()) {
            (a, b) if a == b => Some(SlotCopy::Bits),
            // A 32-bit value always fits 64 bits, but a negative one no unsigned type.
            (4, 8) if !is_signed(from) || is_signed(to) => Some(SlotCopy::Widen {
                signed: is_signed(from),
            }),
            _ => None,
        },
        ValueOp::Number {
            scale: None,
            range: None,
            ..
        } if from == Scalar::Float && to == Scalar::Double => Some(SlotCopy::FloatToDouble),
        _ => None,
    }
}

fn compile_error(path: String, why: String) -> ConvertError {
    ConvertError::Compile { path, why }
}

/// The target field name of a `to`: a bare name, or a dotted path whose parent is where the
/// source field's message goes (`dst_path`).
fn target_field_name(to: &str, dst_path: &str, fpath: &str) -> Result<String, ConvertError> {
    match to.rsplit_once('.') {
        None => Ok(to.to_string()),
        Some((parent, name)) if parent == dst_path => Ok(name.to_string()),
        Some((parent, _)) => Err(compile_error(
            fpath.to_string(),
            format!(
                "target `{to}`: a field stays in the message its parent goes to (`{}`), not `{parent}`",
                if dst_path.is_empty() { "the root" } else { dst_path }
            ),
        )),
    }
}

/// The narrower range of a Thrift `byte` or `i16` single field.
fn narrow_range(schema: &SchemaSet, id: MessageId, j: usize) -> Option<(i64, i64)> {
    let t = schema.message(id).thrift.as_ref()?;
    match t.fields.get(j)?.ty {
        TType::Byte => Some((i8::MIN.into(), i8::MAX.into())),
        TType::I16 => Some((i16::MIN.into(), i16::MAX.into())),
        _ => None,
    }
}

fn is_float(s: Scalar) -> bool {
    matches!(s, Scalar::Float | Scalar::Double)
}

fn is_integer(s: Scalar) -> bool {
    matches!(
        s,
        Scalar::Int32
            | Scalar::Int64
            | Scalar::Uint32
            | Scalar::Uint64
            | Scalar::Sint32
            | Scalar::Sint64
            | Scalar::Fixed32
            | Scalar::Fixed64
            | Scalar::Sfixed32
            | Scalar::Sfixed64
    )
}

fn is_number(s: Scalar) -> bool {
    is_integer(s) || is_float(s)
}

pub(super) fn is_signed(s: Scalar) -> bool {
    !matches!(
        s,
        Scalar::Uint32 | Scalar::Uint64 | Scalar::Fixed32 | Scalar::Fixed64
    )
}

/// `repeated int32`, `map<string, Item>`, `pkg.Item`, `string` ...
fn describe_field(f: &Field, schema: &SchemaSet) -> String {
    let kind = match (f.message, f.enum_type) {
        (Some(m), _) if !f.is_map() => schema.message(m).full_name.clone(),
        (_, Some(e)) => schema.enum_type(e).full_name.clone(),
        _ => f.kind.proto_name().to_string(),
    };
    match f.cardinality {
        optimus_schema::Cardinality::Repeated => format!("repeated {kind}"),
        optimus_schema::Cardinality::Map => "map".to_string(),
        _ => kind,
    }
}
