//! A tonic unary call in-process with optimus messages on both sides: a generated `Flat`
//! and a dynamic `Mixed` record, through `optimus_build::codec::OptimusCodec`.

use std::convert::Infallible;
use std::task::{Context, Poll};

use optimus_build::codec::{invalid_argument, Encoded, OptimusCodec, Received};
use optimus_build::{Arena, FieldRef};
use optimus_build_tests::bench::{self, Flat, Mixed};
use tonic::codegen::{http, BoxFuture, Service};

const FLAT_PATH: &str = "/bench.Test/Flat";
const MIXED_PATH: &str = "/bench.Test/Mixed";

/// Answers a Flat with its `i32_tiny` incremented and its name upper-cased.
struct FlatUnary;

impl tonic::server::UnaryService<Received> for FlatUnary {
    type Response = Encoded;
    type Future = std::future::Ready<Result<tonic::Response<Self::Response>, tonic::Status>>;
    fn call(&mut self, req: tonic::Request<Received>) -> Self::Future {
        let arena = Arena::new();
        let reply = req
            .get_ref()
            .view::<Flat>(&arena)
            .map_err(invalid_argument)
            .map(|flat| {
                let name = arena.alloc_str(&flat.name().to_uppercase());
                flat.set_name(name);
                flat.set_i32_tiny(flat.i32_tiny() + 1);
                tonic::Response::new(Encoded::new(&flat))
            });
        std::future::ready(reply)
    }
}

/// Answers a dynamic Mixed record with its `id` negated.
struct MixedUnary;

impl tonic::server::UnaryService<Received> for MixedUnary {
    type Response = Encoded;
    type Future = std::future::Ready<Result<tonic::Response<Self::Response>, tonic::Status>>;
    fn call(&mut self, req: tonic::Request<Received>) -> Self::Future {
        let arena = Arena::new();
        let reply = req
            .get_ref()
            .record(bench::schema(), Mixed::ID, &arena)
            .map_err(invalid_argument)
            .map(|rec| {
                let i = rec.index_of("id").unwrap();
                let Some(FieldRef::I64(id)) = rec.get(i) else {
                    panic!("an id")
                };
                rec.set(i, FieldRef::I64(-id)).unwrap();
                tonic::Response::new(Encoded::from_record(rec))
            });
        std::future::ready(reply)
    }
}

#[derive(Clone, Default)]
struct TestServer;

impl tonic::server::NamedService for TestServer {
    const NAME: &'static str = "bench.Test";
}

impl Service<http::Request<tonic::body::Body>> for TestServer {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        Box::pin(async move {
            Ok(match req.uri().path() {
                FLAT_PATH => {
                    let mut grpc = tonic::server::Grpc::new(OptimusCodec);
                    grpc.unary(FlatUnary, req).await
                }
                MIXED_PATH => {
                    let mut grpc = tonic::server::Grpc::new(OptimusCodec);
                    grpc.unary(MixedUnary, req).await
                }
                _ => tonic::Status::unimplemented("no such method").into_http(),
            })
        })
    }
}

#[test]
fn a_tonic_unary_call_carries_generated_and_dynamic_messages() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = rt.spawn(
        tonic::transport::Server::builder()
            .add_service(TestServer)
            .serve_with_shutdown(addr, async {
                let _ = stop_rx.await;
            }),
    );

    let flat_bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/flat.bin"
    ))
    .unwrap();
    let mixed_bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/mixed.bin"
    ))
    .unwrap();
    let (flat_reply, mixed_reply, bad) = rt.block_on(async {
        let ep = tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap();
        let mut channel = None;
        for _ in 0..200 {
            match ep.connect().await {
                Ok(c) => {
                    channel = Some(c);
                    break;
                }
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(5)).await,
            }
        }
        let mut grpc = tonic::client::Grpc::new(channel.expect("the server listens"));

        let request = {
            let arena = Arena::new();
            Encoded::new(&Flat::decode(&flat_bytes, &arena).unwrap())
        };
        grpc.ready().await.unwrap();
        let flat = grpc
            .unary(
                tonic::Request::new(request),
                http::uri::PathAndQuery::from_static(FLAT_PATH),
                OptimusCodec,
            )
            .await
            .unwrap()
            .into_inner();

        let request = {
            let arena = Arena::new();
            let rec = optimus_core::engine::decode(
                bench::schema(),
                Mixed::ID,
                &mixed_bytes,
                &arena,
                &Default::default(),
            )
            .unwrap();
            Encoded::from_record(rec)
        };
        grpc.ready().await.unwrap();
        let mixed = grpc
            .unary(
                tonic::Request::new(request),
                http::uri::PathAndQuery::from_static(MIXED_PATH),
                OptimusCodec,
            )
            .await
            .unwrap()
            .into_inner();

        // Bytes that are not a Flat: the handler's view fails, the call ends invalid_argument.
        grpc.ready().await.unwrap();
        let bad = grpc
            .unary(
                tonic::Request::new(Encoded::from_bytes(vec![0x0a, 0x05, 0x01])),
                http::uri::PathAndQuery::from_static(FLAT_PATH),
                OptimusCodec,
            )
            .await;
        (flat, mixed, bad)
    });
    let _ = stop_tx.send(());
    let _ = rt.block_on(server);

    let arena = Arena::new();
    let sent = Flat::decode(&flat_bytes, &arena).unwrap();
    let got = flat_reply.view::<Flat>(&arena).unwrap();
    assert_eq!(got.i32_tiny(), sent.i32_tiny() + 1);
    assert_eq!(got.name(), sent.name().to_uppercase());
    assert_eq!(got.payload(), sent.payload());
    sent.set_i32_tiny(got.i32_tiny());
    sent.set_name(got.name());
    assert_eq!(got.encode_to_vec(), sent.encode_to_vec());

    let sent = Mixed::decode(&mixed_bytes, &arena).unwrap();
    let got = mixed_reply.view::<Mixed>(&arena).unwrap();
    assert_eq!(got.id(), -sent.id());
    assert_eq!(got.title(), sent.title());
    assert_eq!(
        got.header().map(|h| h.encode_to_vec()),
        sent.header().map(|h| h.encode_to_vec())
    );

    assert_eq!(bad.unwrap_err().code(), tonic::Code::InvalidArgument);
}
