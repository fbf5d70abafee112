//! A parser for the Thrift IDL: tokens, then a recursive descent into a [`Document`].
//!
//! It reads what Apache Thrift's compiler (0.17) accepts for the parts optimus needs —
//! `include`, `cpp_include`, `namespace`, `const`, `typedef`, `enum`, `senum`, `struct`,
//! `union`, `exception` and `service` (with `extends`, `oneway`, `throws`) — and skips
//! annotations (`(key = "value", ...)`), `xsd_*` modifiers and `cpp_type` hints. Errors name the
//! file and line.

use crate::SchemaError;

/// A base type of the IDL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// `bool`.
    Bool,
    /// `byte` / `i8`.
    Byte,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `double`.
    Double,
    /// `string`.
    String,
    /// `binary`.
    Binary,
}

/// A type as written in the IDL.
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    /// A base type.
    Base(Base),
    /// A name: a struct, union, exception, enum or typedef, maybe `program.Name`.
    Named(String),
    /// `list<T>`.
    List(Box<Type>),
    /// `set<T>`.
    Set(Box<Type>),
    /// `map<K, V>`.
    Map(Box<Type>, Box<Type>),
}

/// A constant value as written (`1`, `2.5`, `"s"`, `Name`, `[..]`, `{k: v}`).
#[derive(Debug, Clone, PartialEq)]
pub enum ConstValue {
    /// An integer literal.
    Int(i64),
    /// A floating-point literal.
    Double(f64),
    /// A string literal.
    Str(String),
    /// A reference to a constant or an enum value (`Color.RED`).
    Ident(String),
    /// A list or set literal.
    List(Vec<ConstValue>),
    /// A map (or struct) literal.
    Map(Vec<(ConstValue, ConstValue)>),
}

/// A field's requiredness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requiredness {
    /// `required`: must be set to be written, must be present when read.
    Required,
    /// `optional`: written only when set.
    Optional,
    /// Neither keyword ("opt-in, req-out").
    Default,
}

/// What a struct-like definition is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StructKind {
    /// `struct`.
    Struct,
    /// `union`: at most one field set.
    Union,
    /// `exception`.
    Exception,
}

/// A field of a struct, union, exception, argument list or `throws` list.
#[derive(Debug, Clone)]
pub struct FieldDecl {
    /// The declared id, if any (else an implicit negative one is given).
    pub id: Option<i64>,
    /// Requiredness.
    pub req: Requiredness,
    /// Type.
    pub ty: Type,
    /// Name.
    pub name: String,
    /// Default value.
    pub default: Option<ConstValue>,
    /// Line of the declaration.
    pub line: u32,
}

/// A service function.
#[derive(Debug, Clone)]
pub struct Function {
    /// `oneway`.
    pub oneway: bool,
    /// Return type; `None` for `void`.
    pub ret: Option<Type>,
    /// Name.
    pub name: String,
    /// Arguments.
    pub args: Vec<FieldDecl>,
    /// Declared exceptions.
    pub throws: Vec<FieldDecl>,
}

/// A top-level definition.
#[derive(Debug, Clone)]
pub enum Definition {
    /// `const T NAME = value`.
    Const {
        /// Name.
        name: String,
        /// Type.
        ty: Type,
        /// Value.
        value: ConstValue,
    },
    /// `typedef T Name`.
    Typedef {
        /// Name.
        name: String,
        /// The type it names.
        ty: Type,
    },
    /// `enum Name { A = 1, B, ... }` (values numbered as Thrift does: one past the last).
    Enum {
        /// Name.
        name: String,
        /// Values with their numbers.
        values: Vec<(String, i32)>,
    },
    /// `struct`, `union` or `exception`.
    Struct {
        /// Which.
        kind: StructKind,
        /// Name.
        name: String,
        /// Fields in declaration order.
        fields: Vec<FieldDecl>,
    },
    /// `service Name [extends Base] { ... }`.
    Service {
        /// Name.
        name: String,
        /// The service it extends.
        extends: Option<String>,
        /// Functions in declaration order.
        functions: Vec<Function>,
    },
}

/// One parsed `.thrift` file.
#[derive(Debug, Clone, Default)]
pub struct Document {
    /// `include "file"` paths, in order.
    pub includes: Vec<String>,
    /// `namespace <scope> <name>` pairs.
    pub namespaces: Vec<(String, String)>,
    /// Definitions in order.
    pub definitions: Vec<Definition>,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Int(i64),
    Double(f64),
    Str(String),
    Sym(char),
}

struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
    line: u32,
}

impl Lexer<'_> {
    fn skip_space(&mut self) -> Result<(), String> {
        loop {
            match self.src.get(self.pos) {
                Some(b'\n') => {
                    self.line += 1;
                    self.pos += 1;
                }
                Some(c) if c.is_ascii_whitespace() => self.pos += 1,
                Some(b'#') => self.skip_line(),
                Some(b'/') if self.src.get(self.pos + 1) == Some(&b'/') => self.skip_line(),
                Some(b'/') if self.src.get(self.pos + 1) == Some(&b'*') => {
                    self.pos += 2;
                    loop {
                        match self.src.get(self.pos) {
                            None => return Err("unterminated comment".into()),
                            Some(b'*') if self.src.get(self.pos + 1) == Some(&b'/') => {
                                self.pos += 2;
                                break;
                            }
                            Some(b'\n') => {
                                self.line += 1;
                                self.pos += 1;
                            }
                            Some(_) => self.pos += 1,
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn skip_line(&mut self) {
        while let Some(&c) = self.src.get(self.pos) {
            if c == b'\n' {
                break;
            }
            self.pos += 1;
        }
    }

    fn next(&mut self) -> Result<Option<(Tok, u32)>, String> {
        self.skip_space()?;
        let line = self.line;
        let Some(&c) = self.src.get(self.pos) else {
            return Ok(None);
        };
        let start = self.pos;
        if c.is_ascii_alphabetic() || c == b'_' {
            while let Some(&c) = self.src.get(self.pos) {
                if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' {
                    self.pos += 1;
                } else {
                    break;
                }
            }
            let s = std::str::from_utf8(&self.src[start..self.pos]).expect("ASCII");
            return Ok(Some((Tok::Ident(s.to_string()), line)));
        }
        if c.is_ascii_digit()
            || ((c == b'-' || c == b'+')
                && self
                    .src
                    .get(self.pos + 1)
                    .is_some_and(|d| d.is_ascii_digit() || *d == b'.'))
            || (c == b'.' && self.src.get(self.pos + 1).is_some_and(u8::is_ascii_digit))
        {
            self.pos += 1;
            while let Some(&c) = self.src.get(self.pos) {
                let prev = self.src[self.pos - 1];
                if c.is_ascii_alphanumeric()
                    || c == b'.'
                    || ((c == b'-' || c == b'+') && (prev == b'e' || prev == b'E'))
                {
                    self.pos += 1;
                } else {
                    break;
                }
            }
            let s = std::str::from_utf8(&self.src[start..self.pos]).expect("ASCII");
            return number(s).map(|t| Some((t, line)));
        }
        if c == b'"' || c == b'\'' {
            self.pos += 1;
            let mut out = Vec::new();
            loop {
                match self.src.get(self.pos) {
                    None => return Err("unterminated string literal".into()),
                    Some(&q) if q == c => {
                        self.pos += 1;
                        break;
                    }
                    Some(b'\\') => {
                        let e = *self.src.get(self.pos + 1).ok_or("unterminated string")?;
                        out.push(match e {
                            b'n' => b'\n',
                            b't' => b'\t',
                            b'r' => b'\r',
                            b'\\' => b'\\',
                            b'"' => b'"',
                            b'\'' => b'\'',
                            other => return Err(format!("bad escape \\{}", other as char)),
                        });
                        self.pos += 2;
                    }
                    Some(&b) => {
                        if b == b'\n' {
                            self.line += 1;
                        }
                        out.push(b);
                        self.pos += 1;
                    }
                }
            }
            let s = String::from_utf8(out).map_err(|_| "string literal is not UTF-8")?;
            return Ok(Some((Tok::Str(s), line)));
        }
        self.pos += 1;
        Ok(Some((Tok::Sym(c as char), line)))
    }
}

fn number(s: &str) -> Result<Tok, String> {
    let bad = || format!("bad number {s}");
    let (neg, digits) = match s.as_bytes()[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        let v = i64::from_str_radix(hex, 16).map_err(|_| bad())?;
        return Ok(Tok::Int(if neg { -v } else { v }));
    }
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        let v: i128 = digits.parse().map_err(|_| bad())?;
        let v = if neg { -v } else { v };
        return i64::try_from(v).map(Tok::Int).map_err(|_| bad());
    }
    s.parse::<f64>().map(Tok::Double).map_err(|_| bad())
}

/// Parses one `.thrift` file's text; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Document, SchemaError> {
    let mut lexer = Lexer {
        src: text.as_bytes(),
        pos: 0,
        line: 1,
    };
    let mut toks = Vec::new();
    loop {
        match lexer.next() {
            Ok(Some(t)) => toks.push(t),
            Ok(None) => break,
            Err(why) => {
                return Err(SchemaError::Compile(format!(
                    "{file}:{}: {why}",
                    lexer.line
                )))
            }
        }
    }
    let mut p = Parser {
        toks,
        i: 0,
        file,
        next_enum: 0,
    };
    p.document()
}

struct Parser<'f> {
    toks: Vec<(Tok, u32)>,
    i: usize,
    file: &'f str,
    next_enum: i64,
}

type R<T> = Result<T, SchemaError>;

impl Parser<'_> {
    fn err<T>(&self, why: impl std::fmt::Display) -> R<T> {
        let line = self
            .toks
            .get(self.i)
            .or(self.toks.last())
            .map_or(1, |t| t.1);
        Err(SchemaError::Compile(format!("{}:{line}: {why}", self.file)))
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.0)
    }

    fn line(&self) -> u32 {
        self.toks.get(self.i).map_or(0, |t| t.1)
    }

    fn bump(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.i).map(|t| t.0.clone());
        self.i += 1;
        t
    }

    fn is_sym(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Sym(c))
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(s)) if s == w)
    }

    fn eat_sym(&mut self, c: char) -> bool {
        let hit = self.is_sym(c);
        if hit {
            self.i += 1;
        }
        hit
    }

    fn expect_sym(&mut self, c: char) -> R<()> {
        if self.eat_sym(c) {
            Ok(())
        } else {
            self.err(format!("expected '{c}', found {}", self.found()))
        }
    }

    fn found(&self) -> String {
        match self.peek() {
            None => "the end of the file".into(),
            Some(Tok::Ident(s)) => format!("'{s}'"),
            Some(Tok::Int(v)) => format!("{v}"),
            Some(Tok::Double(v)) => format!("{v}"),
            Some(Tok::Str(s)) => format!("{s:?}"),
            Some(Tok::Sym(c)) => format!("'{c}'"),
        }
    }

    fn ident(&mut self) -> R<String> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                let s = s.clone();
                self.i += 1;
                Ok(s)
            }
            _ => self.err(format!("expected a name, found {}", self.found())),
        }
    }

    fn string(&mut self) -> R<String> {
        match self.peek() {
            Some(Tok::Str(s)) => {
                let s = s.clone();
                self.i += 1;
                Ok(s)
            }
            _ => self.err(format!("expected a string literal, found {}", self.found())),
        }
    }

    fn list_sep(&mut self) {
        if !self.eat_sym(',') {
            self.eat_sym(';');
        }
    }

    /// Skips `( key [= "value"], ... )` if present.
    fn annotations(&mut self) -> R<()> {
        if !self.eat_sym('(') {
            return Ok(());
        }
        while !self.eat_sym(')') {
            if self.bump().is_none() {
                return self.err("unterminated annotations");
            }
        }
        Ok(())
    }

    fn document(&mut self) -> R<Document> {
        let mut doc = Document::default();
        while let Some(tok) = self.peek().cloned() {
            let Tok::Ident(word) = tok else {
                return self.err(format!("expected a definition, found {}", self.found()));
            };
            self.i += 1;
            match word.as_str() {
                "include" => doc.includes.push(self.string()?),
                "cpp_include" => {
                    self.string()?;
                }
                "namespace" => {
                    let scope = if self.eat_sym('*') {
                        "*".to_string()
                    } else {
                        self.ident()?
                    };
                    let name = match self.peek() {
                        Some(Tok::Str(_)) => self.string()?,
                        _ => self.ident()?,
                    };
                    doc.namespaces.push((scope, name));
                    self.annotations()?;
                }
                "const" => {
                    let ty = self.field_type()?;
                    let name = self.ident()?;
                    self.expect_sym('=')?;
                    let value = self.const_value()?;
                    self.list_sep();
                    doc.definitions.push(Definition::Const { name, ty, value });
                }
                "typedef" => {
                    let ty = self.field_type()?;
                    let name = self.ident()?;
                    self.annotations()?;
                    self.list_sep();
                    doc.definitions.push(Definition::Typedef { name, ty });
                }
                "enum" => {
                    let name = self.ident()?;
                    self.expect_sym('{')?;
                    self.next_enum = 0;
                    let mut values = Vec::new();
                    while !self.eat_sym('}') {
                        let v = self.ident()?;
                        let number = if self.eat_sym('=') {
                            match self.bump() {
                                Some(Tok::Int(n)) => n,
                                _ => return self.err("expected an integer enum value"),
                            }
                        } else {
                            self.next_enum
                        };
                        let Ok(n32) = i32::try_from(number) else {
                            return self.err(format!("enum value {v} = {number} is not an i32"));
                        };
                        self.next_enum = number + 1;
                        values.push((v, n32));
                        self.annotations()?;
                        self.list_sep();
                    }
                    self.annotations()?;
                    doc.definitions.push(Definition::Enum { name, values });
                }
                "senum" => {
                    // Deprecated string enums: a string typedef.
                    let name = self.ident()?;
                    self.expect_sym('{')?;
                    while !self.eat_sym('}') {
                        self.string()?;
                        self.list_sep();
                    }
                    doc.definitions.push(Definition::Typedef {
                        name,
                        ty: Type::Base(Base::String),
                    });
                }
                "struct" | "union" | "exception" => {
                    let kind = match word.as_str() {
                        "struct" => StructKind::Struct,
                        "union" => StructKind::Union,
                        _ => StructKind::Exception,
                    };
                    let name = self.ident()?;
                    if self.is_word("xsd_all") {
                        self.i += 1;
                    }
                    self.expect_sym('{')?;
                    let fields = self.fields('}')?;
                    self.annotations()?;
                    doc.definitions
                        .push(Definition::Struct { kind, name, fields });
                }
                "service" => {
                    let name = self.ident()?;
                    let extends = if self.is_word("extends") {
                        self.i += 1;
                        Some(self.ident()?)
                    } else {
                        None
                    };
                    self.expect_sym('{')?;
                    let mut functions = Vec::new();
                    while !self.eat_sym('}') {
                        functions.push(self.function()?);
                    }
                    self.annotations()?;
                    doc.definitions.push(Definition::Service {
                        name,
                        extends,
                        functions,
                    });
                }
                other => {
                    self.i -= 1;
                    return self.err(format!("unknown definition '{other}'"));
                }
            }
        }
        Ok(doc)
    }

    fn function(&mut self) -> R<Function> {
        let oneway = self.is_word("oneway");
        if oneway {
            self.i += 1;
        }
        let ret = if self.is_word("void") {
            self.i += 1;
            None
        } else {
            Some(self.field_type()?)
        };
        let name = self.ident()?;
        self.expect_sym('(')?;
        let args = self.fields(')')?;
        let throws = if self.is_word("throws") {
            self.i += 1;
            self.expect_sym('(')?;
            self.fields(')')?
        } else {
            Vec::new()
        };
        self.annotations()?;
        self.list_sep();
        Ok(Function {
            oneway,
            ret,
            name,
            args,
            throws,
        })
    }

    /// Fields up to the closing `close`.
    fn fields(&mut self, close: char) -> R<Vec<FieldDecl>> {
        let mut out = Vec::new();
        while !self.eat_sym(close) {
            let line = self.line();
            let id = match self.peek() {
                Some(Tok::Int(n)) => {
                    let n = *n;
                    self.i += 1;
                    self.expect_sym(':')?;
                    Some(n)
                }
                _ => None,
            };
            let req = if self.is_word("required") {
                self.i += 1;
                Requiredness::Required
            } else if self.is_word("optional") {
                self.i += 1;
                Requiredness::Optional
            } else {
                Requiredness::Default
            };
            let ty = self.field_type()?;
            // `&`: a C++ reference field (a recursive struct), the same on the wire.
            self.eat_sym('&');
            let name = self.ident()?;
            let default = if self.eat_sym('=') {
                Some(self.const_value()?)
            } else {
                None
            };
            if self.is_word("xsd_optional") || self.is_word("xsd_nillable") {
                self.i += 1;
            }
            self.annotations()?;
            self.list_sep();
            out.push(FieldDecl {
                id,
                req,
                ty,
                name,
                default,
                line,
            });
        }
        Ok(out)
    }

    fn field_type(&mut self) -> R<Type> {
        let word = self.ident()?;
        let ty = match word.as_str() {
            "bool" => Type::Base(Base::Bool),
            "byte" | "i8" => Type::Base(Base::Byte),
            "i16" => Type::Base(Base::I16),
            "i32" => Type::Base(Base::I32),
            "i64" => Type::Base(Base::I64),
            "double" => Type::Base(Base::Double),
            "string" | "slist" => Type::Base(Base::String),
            "binary" => Type::Base(Base::Binary),
            "list" | "set" | "map" => {
                if self.is_word("cpp_type") {
                    self.i += 1;
                    self.string()?;
                }
                self.expect_sym('<')?;
                let first = self.field_type()?;
                let ty = if word == "map" {
                    self.expect_sym(',')?;
                    let second = self.field_type()?;
                    Type::Map(Box::new(first), Box::new(second))
                } else if word == "list" {
                    Type::List(Box::new(first))
                } else {
                    Type::Set(Box::new(first))
                };
                self.expect_sym('>')?;
                if self.is_word("cpp_type") {
                    self.i += 1;
                    self.string()?;
                }
                ty
            }
            "uuid" => return self.err("the uuid type (Thrift 0.19+) is not supported"),
            _ => Type::Named(word),
        };
        self.annotations()?;
        Ok(ty)
    }

    fn const_value(&mut self) -> R<ConstValue> {
        match self.bump() {
            Some(Tok::Int(n)) => Ok(ConstValue::Int(n)),
            Some(Tok::Double(d)) => Ok(ConstValue::Double(d)),
            Some(Tok::Str(s)) => Ok(ConstValue::Str(s)),
            Some(Tok::Ident(s)) => Ok(ConstValue::Ident(s)),
            Some(Tok::Sym('[')) => {
                let mut items = Vec::new();
                while !self.eat_sym(']') {
                    items.push(self.const_value()?);
                    self.list_sep();
                }
                Ok(ConstValue::List(items))
            }
            Some(Tok::Sym('{')) => {
                let mut items = Vec::new();
                while !self.eat_sym('}') {
                    let k = self.const_value()?;
                    self.expect_sym(':')?;
                    let v = self.const_value()?;
                    self.list_sep();
                    items.push((k, v));
                }
                Ok(ConstValue::Map(items))
            }
            _ => {
                self.i -= 1;
                self.err(format!("expected a constant value, found {}", self.found()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_definition() {
        let doc = parse(
            "t.thrift",
            r#"
            include "other.thrift"
            namespace py a.b  # comment
            namespace * c
            /* block
               comment */
            const i32 N = -0x10
            const list<string> L = ["a", 'b'];
            const map<string, i32> M = {"x": 1, "y": N}
            typedef map<string, list<i64>> (a = "b") Big
            enum E { A, B = 5, C (x = "y"), }
            struct S {
              1: required i32 a = 3,
              2: optional list<set<E>> b;
              -3: string c (go.tag = "x")
              double d = 1.5e3
            } (annot = "1")
            union U { 1: S s 2: binary b }
            exception X { 1: string why }
            service Base { void ping() }
            service Svc extends Base {
              oneway void fire(1: i32 x),
              i64 add(1: i32 a, 2: i32 b) throws (1: X x);
            }
            "#,
        )
        .unwrap();
        assert_eq!(doc.includes, ["other.thrift"]);
        assert_eq!(doc.namespaces.len(), 2);
        assert_eq!(doc.definitions.len(), 10);
        let Definition::Const { value, .. } = &doc.definitions[0] else {
            panic!()
        };
        assert_eq!(value, &ConstValue::Int(-16));
        let Definition::Enum { values, .. } = &doc.definitions[4] else {
            panic!()
        };
        assert_eq!(values[2], ("C".to_string(), 6));
        let Definition::Struct { fields, .. } = &doc.definitions[5] else {
            panic!()
        };
        assert_eq!(fields.len(), 4);
        assert_eq!(fields[0].req, Requiredness::Required);
        assert_eq!(fields[2].id, Some(-3));
        assert_eq!(fields[3].id, None);
        assert_eq!(fields[3].default, Some(ConstValue::Double(1500.0)));
        let Definition::Service {
            functions, extends, ..
        } = &doc.definitions[9]
        else {
            panic!()
        };
        assert_eq!(extends.as_deref(), Some("Base"));
        assert!(functions[0].oneway && functions[0].ret.is_none());
        assert_eq!(functions[1].throws.len(), 1);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse("x.thrift", "struct S {\n 1: i32 a\n 2: \n}").unwrap_err();
        assert!(e.to_string().starts_with("x.thrift:4:"), "{e}");
        let e = parse("x.thrift", "blah").unwrap_err();
        assert!(e.to_string().contains("unknown definition"), "{e}");
        assert!(parse("x.thrift", "const string s = \"abc").is_err());
        assert!(parse("x.thrift", "/* open").is_err());
    }
}
