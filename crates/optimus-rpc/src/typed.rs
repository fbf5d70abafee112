//! Typed services: handlers that take and return engine messages.
//!
//! A [`TypedService`] is built from a compiled [`SchemaSet`] and the name of one of its
//! `service` blocks; method ids are the methods' declaration order, as everywhere in this
//! crate. Each method gets a handler `Fn(&SchemaSet, &Message) -> Result<Message, Failure>`.
//! The service decodes every request with the engine ([`optimus_core::binary::decode`]) as the
//! method's input type, runs the handler, checks that the reply is of the output type and
//! encodes it. It implements [`Handler`], so it runs inline on the NIC
//! ([`Nic::set_handler`](crate::Nic::set_handler)) or on worker threads
//! ([`Worker::run`](crate::Worker::run)); clones share the schema and the handlers (one per
//! worker thread).
//!
//! The calling side uses the same description: [`TypedService::call`] encodes a request
//! message, makes a synchronous call and decodes the response as the output type.
//!
//! ```no_run
//! # use optimus_rpc::typed::{Failure, TypedService};
//! # fn demo(schema: optimus_schema::SchemaSet) -> Result<(), optimus_rpc::RpcError> {
//! let svc = TypedService::new(schema, "pkg.Greeter")?.on("Hello", |schema, req| {
//!     let name = req.get_by_name(schema, "name").map_err(|e| Failure::bad_request(e.to_string()))?;
//!     let out = schema.message_by_name("pkg.HelloReply").expect("declared");
//!     let mut reply = optimus_core::Message::new(schema, out);
//!     reply.set_by_name(schema, "greeting", name).map_err(|e| Failure::bad_request(e.to_string()))?;
//!     Ok(reply)
//! })?;
//! # let _ = svc; Ok(()) }
//! ```

use std::sync::Arc;

use optimus_core::binary::{self, DecodeOptions};
use optimus_core::{List, Message, Value};
use optimus_schema::{Kind, MessageId, SchemaSet, Service};

use crate::client::RpcClient;
use crate::frame::Status;
use crate::kernels::{open_chain, seal_chain, FieldKernels, Kernel, KernelError, Side};
use crate::methods::MethodTable;
use crate::nic::Handler;
use crate::RpcError;

/// Why a typed handler did not produce a reply: the status the caller sees and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Status sent back ([`Status::HandlerError`] for application errors).
    pub status: Status,
    /// Text sent back as the response payload.
    pub detail: String,
}

impl Failure {
    /// A failure with `status` and `detail`.
    pub fn new(status: Status, detail: impl Into<String>) -> Self {
        Self {
            status,
            detail: detail.into(),
        }
    }

    /// An application error ([`Status::HandlerError`]) saying what was wrong with the request.
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(Status::HandlerError, detail)
    }
}

impl From<Status> for Failure {
    fn from(status: Status) -> Self {
        Self::new(status, "")
    }
}

/// A typed method handler. See the module docs.
pub type MethodFn = dyn Fn(&SchemaSet, &Message) -> Result<Message, Failure> + Send + Sync;

#[derive(Clone)]
struct TypedMethod {
    name: String,
    input: MessageId,
    output: MessageId,
    handler: Option<Arc<MethodFn>>,
    /// Kernel chains on the request's and reply's `bytes` fields.
    kernels: FieldKernels,
}

/// The largest a field may grow when a kernel opens it (decompression), by default.
pub const DEFAULT_KERNEL_LIMIT: usize = 16 << 20;

/// One `.proto` service with engine-message handlers. See the module docs.
#[derive(Clone)]
pub struct TypedService {
    schema: Arc<SchemaSet>,
    table: MethodTable,
    methods: Vec<TypedMethod>,
    echo: bool,
    decode: DecodeOptions,
    kernel_limit: usize,
}

/// The service named `name` in `schema`: its full name, or a short name that only one service
/// has.
///
/// # Errors
/// [`RpcError::Config`] naming the services there are, or saying the short name is ambiguous.
pub fn find_service<'a>(schema: &'a SchemaSet, name: &str) -> Result<&'a Service, RpcError> {
    if let Some(s) = schema.service_by_name(name) {
        return Ok(s);
    }
    let matches: Vec<_> = schema
        .services()
        .iter()
        .filter(|s| s.full_name.rsplit('.').next() == Some(name))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one),
        [] => {
            let all: Vec<&str> = schema
                .services()
                .iter()
                .map(|s| s.full_name.as_str())
                .collect();
            Err(RpcError::Config(format!(
                "no service {name} in the schema (services: {})",
                if all.is_empty() {
                    "none".into()
                } else {
                    all.join(", ")
                }
            )))
        }
        _ => Err(RpcError::Config(format!(
            "service name {name} is ambiguous; give the full name"
        ))),
    }
}

impl TypedService {
    /// The service `name` (full, or a unique short name) of `schema`, with no handlers yet:
    /// every method answers [`Status::Unavailable`] until given one with [`on`](Self::on).
    ///
    /// # Errors
    /// [`RpcError::Config`] when there is no such service, or its methods cannot be numbered.
    pub fn new(schema: impl Into<Arc<SchemaSet>>, name: &str) -> Result<Self, RpcError> {
        let schema = schema.into();
        let svc = find_service(&schema, name)?;
        let table = MethodTable::for_service(&schema, svc)?;
        let methods = svc
            .methods
            .iter()
            .map(|m| TypedMethod {
                name: m.name.clone(),
                input: m.input,
                output: m.output,
                handler: None,
                kernels: FieldKernels::default(),
            })
            .collect();
        Ok(Self {
            schema,
            table,
            methods,
            echo: false,
            decode: DecodeOptions::default(),
            kernel_limit: DEFAULT_KERNEL_LIMIT,
        })
    }

    /// Sets the handler of method `name`.
    ///
    /// # Errors
    /// [`RpcError::Config`] when the service has no such method.
    pub fn on(
        mut self,
        name: &str,
        f: impl Fn(&SchemaSet, &Message) -> Result<Message, Failure> + Send + Sync + 'static,
    ) -> Result<Self, RpcError> {
        let id = self.method_id(name)?;
        self.methods[usize::from(id)].handler = Some(Arc::new(f));
        Ok(self)
    }

    /// Runs `chain` on the `bytes` field `field` (single or repeated) of `method`'s request
    /// or reply: the side that writes the message seals it (compresses, encrypts, adds a
    /// checksum, in chain order), the side that reads it opens it (in reverse). The service
    /// opens requests and seals replies wherever it runs — inline on the NIC core, or on
    /// workers — and [`TypedService::call`] does the caller's part. A field that does not
    /// open (tampered, corrupt, past the limit) fails the call with
    /// [`Status::HandlerError`] naming the field.
    ///
    /// # Errors
    /// [`RpcError::Config`] for an unknown method or field, or a field that is not `bytes`.
    pub fn with_kernels(
        mut self,
        method: &str,
        side: Side,
        field: &str,
        chain: Vec<Kernel>,
    ) -> Result<Self, RpcError> {
        let id = self.method_id(method)?;
        let m = &mut self.methods[usize::from(id)];
        m.kernels
            .add(&self.schema, (m.input, m.output), side, field, chain)?;
        Ok(self)
    }

    /// The most bytes a kernel may open a field to (decompression); 16 MiB by default.
    pub fn with_kernel_limit(mut self, limit: usize) -> Self {
        self.kernel_limit = limit;
        self
    }

    /// Runs `side`'s kernels of method `m` on `msg`: sealing or opening each chained field.
    fn run_kernels(
        &self,
        m: &TypedMethod,
        side: Side,
        seal: bool,
        msg: &mut Message,
    ) -> Result<(), String> {
        let ty = self.schema.message(msg.type_id());
        for (index, chain) in m.kernels.on(side) {
            let run = |bytes: &[u8]| {
                if seal {
                    seal_chain(chain, bytes)
                } else {
                    open_chain(chain, bytes, self.kernel_limit)
                }
            };
            map_bytes(&self.schema, msg, index, run)
                .map_err(|e| format!("{}.{}{e}", ty.full_name, ty.fields[index].name))?;
        }
        Ok(())
    }

    /// Methods without a handler answer with their request when input and output types are the
    /// same, and with an empty output message otherwise (after checking the request decodes).
    pub fn echo(mut self) -> Self {
        self.echo = true;
        self
    }

    /// Decoding limits for requests (and responses in [`call`](Self::call)).
    pub fn with_decode_options(mut self, opts: DecodeOptions) -> Self {
        self.decode = opts;
        self
    }

    /// The schema.
    pub fn schema(&self) -> &Arc<SchemaSet> {
        &self.schema
    }

    /// The method table (names and types in id order).
    pub fn table(&self) -> &MethodTable {
        &self.table
    }

    /// The id of method `name`.
    ///
    /// # Errors
    /// [`RpcError::Config`] when the service has no such method.
    pub fn method_id(&self, name: &str) -> Result<u16, RpcError> {
        self.table.id_of(name).ok_or_else(|| {
            RpcError::Config(format!(
                "service {} has no method {name}",
                self.table.service
            ))
        })
    }

    /// Request and response types of method `id`.
    pub fn method_types(&self, id: u16) -> Option<(MessageId, MessageId)> {
        self.methods
            .get(usize::from(id))
            .map(|m| (m.input, m.output))
    }

    fn run(&self, method: u16, request: &[u8], response: &mut Vec<u8>) -> Result<(), Failure> {
        let m = self.methods.get(usize::from(method)).ok_or_else(|| {
            Failure::new(
                Status::UnknownMethod,
                format!("{} has no method with id {method}", self.table.service),
            )
        })?;
        let mut req = binary::decode(&self.schema, m.input, request, &self.decode)
            .map_err(|e| Failure::bad_request(format!("bad request: {e}")))?;
        self.run_kernels(m, Side::Request, false, &mut req)
            .map_err(|e| Failure::bad_request(format!("bad request: {e}")))?;
        let mut reply = match &m.handler {
            Some(f) => f(&self.schema, &req)?,
            None if self.echo && m.input == m.output => req,
            None if self.echo => Message::new(&self.schema, m.output),
            None => {
                return Err(Failure::new(
                    Status::Unavailable,
                    format!("no handler for {}/{}", self.table.service, m.name),
                ))
            }
        };
        if reply.type_id() != m.output {
            return Err(Failure::bad_request(format!(
                "the handler of {} returned a {}, not a {}",
                m.name,
                self.schema.message(reply.type_id()).full_name,
                self.schema.message(m.output).full_name
            )));
        }
        self.run_kernels(m, Side::Reply, true, &mut reply)
            .map_err(|e| Failure::bad_request(format!("reply: {e}")))?;
        binary::encode_to(&self.schema, &reply, response);
        Ok(())
    }

    /// A synchronous typed call of method `method` on connection `conn` through `client`.
    ///
    /// # Errors
    /// [`RpcError::Config`] for an unknown method or a request of the wrong type;
    /// [`RpcError::BadMessage`] when the response does not decode as the output type; the
    /// call's own errors (status, timeout, ...).
    pub fn call(
        &self,
        client: &mut RpcClient,
        conn: u32,
        method: &str,
        request: &Message,
    ) -> Result<Message, RpcError> {
        let id = self.method_id(method)?;
        let m = &self.methods[usize::from(id)];
        if request.type_id() != m.input {
            return Err(RpcError::Config(format!(
                "{method} takes a {}, not a {}",
                self.schema.message(m.input).full_name,
                self.schema.message(request.type_id()).full_name
            )));
        }
        let body = if m.kernels.on(Side::Request).next().is_some() {
            let mut sealed = request.clone();
            self.run_kernels(m, Side::Request, true, &mut sealed)
                .map_err(|e| RpcError::BadMessage(format!("request: {e}")))?;
            binary::encode(&self.schema, &sealed)
        } else {
            binary::encode(&self.schema, request)
        };
        let mut out = Vec::new();
        client.call(conn, id, &body, &mut out)?;
        let mut reply =
            binary::decode(&self.schema, m.output, &out, &self.decode).map_err(|e| {
                RpcError::BadMessage(format!(
                    "response is not a {}: {e}",
                    self.schema.message(m.output).full_name
                ))
            })?;
        self.run_kernels(m, Side::Reply, false, &mut reply)
            .map_err(|e| RpcError::BadMessage(format!("response: {e}")))?;
        Ok(reply)
    }
}

/// Replaces every value of `bytes` field `index` of `msg` (one, or each of a repeated
/// field's) with `f` of it; the error's text starts with the element's `[i]` for a repeated
/// field, then `: ` and the kernel's error.
fn map_bytes(
    schema: &SchemaSet,
    msg: &mut Message,
    index: usize,
    f: impl Fn(&[u8]) -> Result<Vec<u8>, KernelError>,
) -> Result<(), String> {
    let value = match msg.get(index) {
        None => return Ok(()),
        Some(Value::Bytes(b)) => Value::Bytes(f(b).map_err(|e| format!(": {e}"))?),
        Some(Value::List(list)) => {
            let mut out = List::new(Kind::Bytes);
            for i in 0..list.len() {
                if let Some(Value::Bytes(b)) = list.get(i) {
                    let v = f(&b).map_err(|e| format!("[{i}]: {e}"))?;
                    out.push(Value::Bytes(v)).expect("bytes into a bytes list");
                }
            }
            Value::List(out)
        }
        Some(_) => return Ok(()),
    };
    msg.set(schema, index, value)
        .expect("a bytes value for a bytes field");
    Ok(())
}

impl Handler for TypedService {
    fn handle(&mut self, method: u16, request: &[u8], response: &mut Vec<u8>) -> Status {
        match self.run(method, request, response) {
            Ok(()) => Status::Ok,
            Err(f) => {
                response.clear();
                response.extend_from_slice(f.detail.as_bytes());
                f.status
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::NoTransport;
    use crate::{ClientOptions, IdlePolicy, Nic, NicConfig, LOCAL_CONN};
    use optimus_core::Value;

    const PROTO: &str = r#"
        syntax = "proto3";
        package demo;
        message Req { string name = 1; int32 times = 2; }
        message Rep { repeated string lines = 1; }
        service Greeter {
          rpc Hello(Req) returns (Rep);
          rpc Echo(Req) returns (Req);
          rpc Later(Req) returns (Rep);
        }
    "#;

    fn schema() -> SchemaSet {
        SchemaSet::from_source(PROTO).expect("schema compiles")
    }

    fn hello(schema: &SchemaSet, req: &Message) -> Result<Message, Failure> {
        let name = match req.get_by_name(schema, "name") {
            Ok(Value::String(s)) => s,
            _ => String::new(),
        };
        let times = match req.get_by_name(schema, "times") {
            Ok(Value::I32(n)) => n,
            _ => 0,
        };
        if times < 0 {
            return Err(Failure::bad_request("times must not be negative"));
        }
        let rep = schema.message_by_name("demo.Rep").expect("declared");
        let mut out = Message::new(schema, rep);
        for i in 0..times {
            out.list_mut(schema, 0)
                .push(Value::String(format!("hello {name} #{i}")))
                .expect("a string list");
        }
        Ok(out)
    }

    fn request(schema: &SchemaSet, name: &str, times: i32) -> Message {
        let id = schema.message_by_name("demo.Req").expect("declared");
        let mut m = Message::new(schema, id);
        m.set_by_name(schema, "name", Value::String(name.into()))
            .unwrap();
        m.set_by_name(schema, "times", Value::I32(times)).unwrap();
        m
    }

    #[test]
    fn typed_handlers_get_and_return_engine_messages() {
        let svc = TypedService::new(schema(), "Greeter")
            .unwrap()
            .on("Hello", hello)
            .unwrap();
        assert!(TypedService::new(schema(), "Nope").is_err());
        assert!(svc.clone().on("Missing", hello).is_err());
        let (mut nic, h) = Nic::new(NoTransport, NicConfig::default()).unwrap();
        nic.set_handler(svc.clone());
        let nic = nic.spawn(None, IdlePolicy::default());
        let mut c = h.client(ClientOptions::default()).unwrap();
        let s = svc.schema().clone();

        let rep = svc
            .call(&mut c, LOCAL_CONN, "Hello", &request(&s, "ada", 2))
            .unwrap();
        let lines = match rep.get_by_name(&s, "lines").unwrap() {
            Value::List(l) => (0..l.len())
                .map(|i| format!("{:?}", l.get(i)))
                .collect::<Vec<_>>(),
            v => panic!("{v:?}"),
        };
        assert_eq!(lines.len(), 2);
        assert!(lines[1].contains("hello ada #1"), "{lines:?}");

        let err = svc
            .call(&mut c, LOCAL_CONN, "Hello", &request(&s, "x", -1))
            .unwrap_err();
        assert!(
            matches!(&err, RpcError::Status { status: Status::HandlerError, detail } if detail.contains("negative")),
            "{err}"
        );
        // No handler and no echo: Unavailable, naming the method.
        let err = svc
            .call(&mut c, LOCAL_CONN, "Later", &request(&s, "x", 1))
            .unwrap_err();
        assert!(
            matches!(&err, RpcError::Status { status: Status::Unavailable, detail } if detail.contains("Later")),
            "{err}"
        );
        // A request of the wrong type never leaves.
        let rep_id = s.message_by_name("demo.Rep").unwrap();
        assert!(matches!(
            svc.call(&mut c, LOCAL_CONN, "Hello", &Message::new(&s, rep_id)),
            Err(RpcError::Config(_))
        ));
        // Bytes that are not a request: the handler never sees them.
        let mut out = Vec::new();
        let err = c.call(LOCAL_CONN, 0, &[0xFF, 0xFF], &mut out).unwrap_err();
        assert!(
            matches!(&err, RpcError::Status { status: Status::HandlerError, detail } if detail.contains("bad request")),
            "{err}"
        );
        drop(c);
        nic.stop();
    }

    #[test]
    fn echo_answers_methods_without_handlers() {
        let mut svc = TypedService::new(schema(), "demo.Greeter").unwrap().echo();
        let s = svc.schema().clone();
        let req = binary::encode(&s, &request(&s, "bob", 3));
        let mut out = Vec::new();
        assert_eq!(svc.handle(1, &req, &mut out), Status::Ok);
        assert_eq!(out, req, "Echo(Req) returns Req: the request itself");
        out.clear();
        assert_eq!(svc.handle(0, &req, &mut out), Status::Ok);
        assert!(out.is_empty(), "Hello(Req) returns Rep: an empty Rep");
        out.clear();
        assert_eq!(svc.handle(9, &req, &mut out), Status::UnknownMethod);
        // A handler that returns the wrong type is caught.
        let mut wrong = svc.on("Later", |_, req| Ok(req.clone())).unwrap();
        out.clear();
        assert_eq!(wrong.handle(2, &req, &mut out), Status::HandlerError);
        assert!(String::from_utf8_lossy(&out).contains("not a demo.Rep"));
    }

    const IMAGES: &str = r#"
        syntax = "proto3";
        package img;
        message Image { string name = 1; bytes data = 2; repeated bytes tiles = 3; }
        service Store { rpc Put(Image) returns (Image); }
    "#;

    /// The image service of RPCAcc's example: requests arrive compressed and encrypted, the
    /// handler sees plain bytes, replies leave compressed and checksummed.
    fn image_service() -> TypedService {
        let key = [42u8; 32];
        let request_chain = || vec![Kernel::Zstd { level: 3 }, Kernel::AesGcm { key }];
        TypedService::new(SchemaSet::from_source(IMAGES).unwrap(), "Store")
            .unwrap()
            .on("Put", |schema, req| {
                // The handler sees the opened bytes; it answers with them reversed.
                let mut rep = req.clone();
                if let Ok(Value::Bytes(b)) = req.get_by_name(schema, "data") {
                    if !b.starts_with(b"PIXELS") {
                        return Err(Failure::bad_request("the handler got sealed bytes"));
                    }
                    rep.set_by_name(schema, "data", Value::Bytes(b.into_iter().rev().collect()))
                        .unwrap();
                }
                Ok(rep)
            })
            .unwrap()
            .with_kernels("Put", Side::Request, "data", request_chain())
            .unwrap()
            .with_kernels(
                "Put",
                Side::Request,
                "tiles",
                vec![Kernel::Lz4, Kernel::Crc32c],
            )
            .unwrap()
            .with_kernels(
                "Put",
                Side::Reply,
                "data",
                vec![Kernel::Zstd { level: 1 }, Kernel::Crc32c],
            )
            .unwrap()
    }

    #[test]
    fn kernels_run_on_fields_inline_on_the_nic_and_failures_answer_the_call() {
        let svc = image_service();
        assert!(svc
            .clone()
            .with_kernels("Put", Side::Request, "name", vec![Kernel::Lz4])
            .is_err());
        assert!(svc
            .clone()
            .with_kernels("Put", Side::Reply, "nope", vec![Kernel::Lz4])
            .is_err());
        let (mut nic, h) = Nic::new(NoTransport, NicConfig::default()).unwrap();
        nic.set_handler(svc.clone());
        let nic = nic.spawn(None, IdlePolicy::default());
        let mut c = h.client(ClientOptions::default()).unwrap();
        let s = svc.schema().clone();
        let id = s.message_by_name("img.Image").unwrap();
        let mut img = Message::new(&s, id);
        let pixels: Vec<u8> = b"PIXELS"
            .iter()
            .copied()
            .chain((0..50_000u32).map(|i| (i % 7) as u8))
            .collect();
        img.set_by_name(&s, "data", Value::Bytes(pixels.clone()))
            .unwrap();
        let mut tiles = List::new(Kind::Bytes);
        for t in [&b"tile-a"[..], b"", b"tile-c"] {
            tiles.push(Value::Bytes(t.to_vec())).unwrap();
        }
        img.set_by_name(&s, "tiles", Value::List(tiles)).unwrap();

        // Both sides' kernels run: the caller seals and opens, the NIC core opens and seals.
        let rep = svc.call(&mut c, LOCAL_CONN, "Put", &img).unwrap();
        let Ok(Value::Bytes(data)) = rep.get_by_name(&s, "data") else {
            panic!("data")
        };
        assert_eq!(data, pixels.iter().rev().copied().collect::<Vec<_>>());
        assert_eq!(
            rep.get_by_name(&s, "tiles").unwrap(),
            img.get_by_name(&s, "tiles").unwrap()
        );

        // On the wire the request's data is sealed: raw bytes with a tampered field fail the
        // call with an error naming the field; the NIC keeps serving.
        let mut sealed = img.clone();
        let key = [42u8; 32];
        let body = seal_chain(
            &[Kernel::Zstd { level: 3 }, Kernel::AesGcm { key }],
            &pixels,
        )
        .unwrap();
        let mut tampered = body.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        sealed
            .set_by_name(&s, "data", Value::Bytes(tampered))
            .unwrap();
        sealed
            .set_by_name(&s, "tiles", Value::List(List::new(Kind::Bytes)))
            .unwrap();
        let mut out = Vec::new();
        let err = c
            .call(LOCAL_CONN, 0, &binary::encode(&s, &sealed), &mut out)
            .unwrap_err();
        assert!(
            matches!(&err, RpcError::Status { status: Status::HandlerError, detail }
                if detail.contains("img.Image.data: aes-gcm: authentication failed")),
            "{err}"
        );
        let rep = svc.call(&mut c, LOCAL_CONN, "Put", &img).unwrap();
        assert!(rep.get_by_name(&s, "data").is_ok());
        // A bad checksum on one repeated element names it.
        sealed.set_by_name(&s, "data", Value::Bytes(body)).unwrap();
        let mut tiles = List::new(Kind::Bytes);
        tiles.push(Value::Bytes(vec![1, 2, 3, 4, 5])).unwrap();
        sealed.set_by_name(&s, "tiles", Value::List(tiles)).unwrap();
        let err = c
            .call(LOCAL_CONN, 0, &binary::encode(&s, &sealed), &mut out)
            .unwrap_err();
        assert!(
            format!("{err}").contains("img.Image.tiles[0]: crc32c: checksum"),
            "{err}"
        );
        nic.stop();
    }
}
