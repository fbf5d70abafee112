//! Generates the types the tests use: the benchmark messages and Google's conformance
//! messages, with the accessor check (`__copy_to`) on.
fn main() {
    let testdata = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata");
    let mut config = optimus_build::Config::new();
    config.copy_check(true);
    config
        .compile_protos(&[format!("{testdata}/peers.proto")], &[testdata])
        .unwrap();
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
