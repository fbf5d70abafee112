//! The schema both fuzz targets decode into: Google's conformance test messages.

use optimus_schema::{MessageId, SchemaSet};

pub fn schema() -> (SchemaSet, [MessageId; 2]) {
    let schema = SchemaSet::from_sources(&[
        (
            "test_messages_proto2.proto",
            include_str!("../../testdata/conformance/test_messages_proto2.proto"),
        ),
        (
            "test_messages_proto3.proto",
            include_str!("../../testdata/conformance/test_messages_proto3.proto"),
        ),
    ])
    .expect("conformance protos compile");
    let p2 = schema
        .message_by_name("protobuf_test_messages.proto2.TestAllTypesProto2")
        .expect("proto2 type");
    let p3 = schema
        .message_by_name("protobuf_test_messages.proto3.TestAllTypesProto3")
        .expect("proto3 type");
    (schema, [p2, p3])
}
