//! Generates the types the tests use: the benchmark messages and Google's conformance
//! messages, with the accessor check (`__copy_to`) on.
fn main() {
    let testdata = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata");
    let mut config = optimus_build::Config::new();
    config.copy_check(true);
    config
        .compile_protos(&[format!("{testdata}/peers.proto")], &[testdata])
        .unwrap();
    // The schema zoo: nine packages that import each other (so references across packages),
    // odd names, field numbers up to the largest, proto2 defaults, groups and extensions, and
    // the well-known types.
    let zoo = format!("{testdata}/zoo");
    let zoo_files: Vec<String> = [
        "enums",
        "importer",
        "maps",
        "nested",
        "oneofs",
        "proto2",
        "proto2_ext",
        "scalars",
        "wkt",
    ]
    .iter()
    .map(|f| format!("{zoo}/{f}.proto"))
    .collect();
    config.compile_protos(&zoo_files, &[&zoo]).unwrap();
    let conformance = format!("{testdata}/conformance");
    // The testee protocol (package `conformance`), for the generated-mode testee.
    config
        .compile_protos(
            &[format!("{conformance}/conformance.proto")],
            &[&conformance],
        )
        .unwrap();
    config
        .compile_protos(
            &[
                format!("{conformance}/test_messages_proto2.proto"),
                format!("{conformance}/test_messages_proto3.proto"),
            ],
            &[&conformance],
        )
        .unwrap();
}
