use super::*;
use crate::{Cardinality, Kind};

fn zoo() -> SchemaSet {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/thrift");
    SchemaSet::from_thrift_files(&[format!("{dir}/zoo.thrift")], &[] as &[&str]).unwrap()
}

#[test]
fn zoo_lowers_every_definition() {
    let s = zoo();
    let info = s.thrift().unwrap();
    assert_eq!(info.programs[0].name, "zoo");
    assert_eq!(info.programs[1].name, "zoo_base");
    assert!(info.programs[0].constants.iter().any(|(n, v)| n == "LIMITS"
        && *v
            == ConstValue::Map(vec![
                (ConstValue::Str("low".into()), ConstValue::Int(1)),
                (ConstValue::Str("high".into()), ConstValue::Int(7)),
            ])));
    assert_eq!(info.programs[0].services[0].oneway, ["fire"]);

    let sc = s.message(s.thrift_struct_by_name("Scalars").unwrap());
    let t = sc.thrift.as_ref().unwrap();
    let tys: Vec<TType> = t.fields.iter().map(|f| f.ty).collect();
    use TType::*;
    assert_eq!(
        tys,
        [Bool, Byte, I16, I32, I64, Double, String, Binary, Enum, Enum, I64]
    );
    assert_eq!(sc.fields[1].kind, Kind::Int32);
    assert_eq!(sc.fields[7].kind, Kind::Bytes);
    assert!(sc
        .fields
        .iter()
        .all(|f| f.cardinality == Cardinality::Optional));

    let d = s.message(s.message_by_name("zoo.Defaults").unwrap());
    assert_eq!(d.fields[0].default, Some(DefaultValue::I64(42)));
    assert_eq!(
        d.fields[1].default,
        Some(DefaultValue::String("hello".into()))
    );
    assert_eq!(d.fields[3].default, Some(DefaultValue::Bool(true)));
    assert_eq!(d.fields[4].default, Some(DefaultValue::Enum(2)));
    assert!(d.fields[6].is_required);
    let dt = d.thrift.as_ref().unwrap();
    assert_eq!(
        dt.fields[5].default,
        Some(ConstValue::List(
            [2, 3, 5, 7].into_iter().map(ConstValue::Int).collect()
        ))
    );
    assert_eq!(dt.fields[6].requiredness, Requiredness::Required);

    let c = s.message(s.message_by_name("zoo.Containers").unwrap());
    let ct = c.thrift.as_ref().unwrap();
    let by = |n: &str| c.field_index_by_name(n).unwrap();
    assert_eq!(ct.fields[by("names")].ty, Set);
    assert_eq!(ct.fields[by("names")].elem, String);
    assert_eq!(c.fields[by("counts")].cardinality, Cardinality::Map);
    // Keys protobuf maps cannot have: a repeated field of entries.
    assert_eq!(c.fields[by("by_kind")].cardinality, Cardinality::Repeated);
    assert_eq!(c.fields[by("weird")].cardinality, Cardinality::Repeated);
    assert_eq!(
        (ct.fields[by("weird")].key, ct.fields[by("weird")].value),
        (Double, Byte)
    );
    // list<list<i32>>: a repeated wrapper whose one field is the inner list.
    let grid = &c.fields[by("grid")];
    assert_eq!(ct.fields[by("grid")].elem, List);
    let w = s.message(grid.message.unwrap());
    assert_eq!(w.full_name, "zoo.Containers.grid.elem");
    assert_eq!(w.thrift.as_ref().unwrap().kind, ThriftKind::Wrapper);
    assert_eq!(w.fields[0].cardinality, Cardinality::Repeated);
    // Typedefs resolve at the use site.
    assert_eq!(ct.fields[by("path")].elem, Struct);
    assert_eq!(c.fields[by("named")].cardinality, Cardinality::Map);
    // map<list<i32>, set<string>>: wrapped key and value.
    let ck = s.message(c.fields[by("container_keys")].message.unwrap());
    let ckt = ck.thrift.as_ref().unwrap();
    assert_eq!((ckt.fields[0].ty, ckt.fields[1].ty), (List, Set));

    let sp = s.message(s.message_by_name("zoo.Sparse").unwrap());
    let spt = sp.thrift.as_ref().unwrap();
    let ids: Vec<i16> = spt
        .order
        .iter()
        .map(|&i| spt.fields[i as usize].id)
        .collect();
    assert_eq!(ids, [-1, 1, 20, 300, 32767]);
    assert_eq!(
        spt.find(&sp.table, -1),
        sp.field_index_by_name("implicit_id")
    );
    assert_eq!(spt.find(&sp.table, 32767), sp.field_index_by_name("last"));

    let svc = s.service_by_name("zoo.Zoo").unwrap();
    assert_eq!(svc.methods.len(), 3);
    let result = s.message(svc.methods[0].output);
    assert_eq!(result.full_name, "zoo.Zoo.echo_result");
    let rt = result.thrift.as_ref().unwrap();
    let ids: Vec<i16> = rt.order.iter().map(|&i| rt.fields[i as usize].id).collect();
    assert_eq!(ids, [0, 1]);
    assert_eq!(s.message(svc.methods[2].output).fields.len(), 0);
    let e = s.enum_type(s.enum_by_name("zoo_base.Color").unwrap());
    assert!(!e.is_closed);
    assert_eq!(
        s.message(s.message_by_name("zoo.Choice").unwrap())
            .thrift
            .as_ref()
            .unwrap()
            .kind,
        ThriftKind::Union
    );
}

#[test]
fn bad_schemas_are_named() {
    let err = |src: &str| {
        SchemaSet::from_thrift_sources(&[("m.thrift", src)])
            .unwrap_err()
            .to_string()
    };
    assert!(err("struct S { 1: Nope x }").contains("unknown type Nope"));
    assert!(err("struct S { 1: i32 a 1: i32 b }").contains("used twice"));
    assert!(err("struct S { 70000: i32 a }").contains("not an i16"));
    assert!(err("include \"gone.thrift\"").contains("not found"));
    assert!(err("typedef A B typedef B A struct S { 1: A a }").contains("cycle"));
    assert!(err("struct S { 1: i32 a = \"x\" }").contains("bad default"));
    assert!(err("const i32 X = Y").contains("unknown constant"));
}

#[test]
fn in_memory_includes() {
    let s = SchemaSet::from_thrift_sources(&[
        (
            "a.thrift",
            "include \"b.thrift\" struct A { 1: b.B b 2: b.E e = b.E.Y }",
        ),
        ("b.thrift", "struct B { 1: i32 x } enum E { X, Y }"),
    ])
    .unwrap();
    let a = s.message(s.message_by_name("a.A").unwrap());
    assert_eq!(a.fields[1].default, Some(DefaultValue::Enum(1)));
    assert_eq!(s.message(a.fields[0].message.unwrap()).full_name, "b.B");
}

#[test]
fn files_are_found_through_include_dirs() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/thrift");
    let s = SchemaSet::from_thrift_files(&["zoo.thrift"], &["/nonexistent", dir]).unwrap();
    assert!(s.thrift_struct_by_name("Everything").is_some());
    let e = SchemaSet::from_thrift_files(&["gone.thrift"], &["/a", "/b"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "gone.thrift: not found (tried gone.thrift, /a/gone.thrift, /b/gone.thrift)"
    );
}

/// What Apache Thrift's own test IDLs use: reference fields (`&`), enum values by bare or
/// program-qualified name, and a value named through another enum of the program.
#[test]
fn apache_thrift_idioms() {
    let s = SchemaSet::from_thrift_sources(&[
        (
            "a.thrift",
            r#"include "b.thrift"
               enum E1 { X = 1 } enum E2 { Y = 7 }
               struct R { 1: R & next 2: E2 e = E1.Y 3: b.F f = b.Z 4: E1 g = X }"#,
        ),
        ("b.thrift", "enum F { Z = 3 }"),
    ])
    .unwrap();
    let r = s.message(s.message_by_name("a.R").unwrap());
    let defaults: Vec<_> = r.fields[1..].iter().map(|f| f.default.clone()).collect();
    assert_eq!(
        defaults,
        [
            Some(DefaultValue::Enum(7)),
            Some(DefaultValue::Enum(3)),
            Some(DefaultValue::Enum(1))
        ]
    );
}
