//! TLS over the TCP transport: calls over a TLS session (with and without client
//! certificates, settings from PEM files), a server the client's CA did not sign, a client
//! without the certificate a server requires, and streams cut short. Every failure is an
//! error within a bound, never a hang or a call that succeeds.

mod common;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use optimus_rpc::frame::{FrameHeader, FrameKind};
use optimus_rpc::{NicHandle, NicThread, RpcError, Tcp, TlsClient, TlsServer, Transport};
use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A CA and certificates it signs.
struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

/// A certificate and its key.
struct Leaf {
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl Leaf {
    fn chain(&self) -> Vec<CertificateDer<'static>> {
        vec![self.cert.der().clone()]
    }
    fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.serialize_der()))
    }
}

impl Ca {
    fn new(name: &str) -> Self {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name
            .push(rcgen::DnType::CommonName, name.to_string());
        let cert = p.self_signed(&key).unwrap();
        Self { cert, key }
    }

    fn roots(&self) -> Vec<CertificateDer<'static>> {
        vec![self.cert.der().clone()]
    }

    fn issue(&self, names: &[&str], usage: ExtendedKeyUsagePurpose) -> Leaf {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .unwrap();
        p.extended_key_usages = vec![usage];
        let cert = p.signed_by(&key, &self.cert, &self.key).unwrap();
        Leaf { cert, key }
    }

    fn server(&self) -> Leaf {
        self.issue(
            &["localhost", "127.0.0.1"],
            ExtendedKeyUsagePurpose::ServerAuth,
        )
    }

    fn client(&self) -> Leaf {
        self.issue(&["client"], ExtendedKeyUsagePurpose::ClientAuth)
    }
}

fn serve(tls: TlsServer) -> (NicThread<Tcp>, String) {
    let t = Tcp::listen_tls("127.0.0.1:0", tls).unwrap();
    let addr = t.local_addr();
    let (s, _) = start(t, config(1), true);
    (s, addr)
}

fn client(tls: TlsClient) -> (NicThread<Tcp>, NicHandle) {
    start(Tcp::client_tls(tls), config(1), false)
}

/// `n` echo calls over `conn`, each checked.
fn calls(ch: &NicHandle, conn: u32, n: usize) {
    let mut c = ch.client(client_opts(1)).unwrap();
    let mut resp = Vec::new();
    for i in 0..n {
        let req = payload(2, i);
        c.call(conn, 0, &req, &mut resp)
            .unwrap_or_else(|e| panic!("call {i}: {e}"));
        assert_eq!(resp, req);
    }
}

#[test]
fn calls_succeed_over_tls_and_mutual_tls() {
    let ca = Ca::new("test CA");
    let srv = ca.server();
    // Server authentication only.
    let (server, addr) = serve(TlsServer::new(srv.chain(), srv.key(), None).unwrap());
    let (_c, ch) = client(TlsClient::new(ca.roots(), None).unwrap());
    let conn = ch
        .connect(&addr, Duration::from_secs(10))
        .expect("TLS connect");
    calls(&ch, conn, 300);
    drop(server);

    // Mutual TLS, everything from PEM files.
    let dir = std::env::temp_dir().join(format!("optimus-rpc-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cl = ca.client();
    let w = |name: &str, text: String| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let ca_pem = w("ca.pem", ca.cert.pem());
    let srv_pem = w("server.pem", srv.cert.pem());
    let srv_key = w("server.key", srv.key.serialize_pem());
    let cl_pem = w("client.pem", cl.cert.pem());
    let cl_key = w("client.key", cl.key.serialize_pem());
    let tls = TlsServer::from_pem_files(&srv_pem, &srv_key, Some(&ca_pem)).unwrap();
    let (_server, addr) = serve(tls);
    let tls = TlsClient::from_pem_files(&ca_pem, Some((&cl_pem, &cl_key))).unwrap();
    let (_c, ch) = client(tls.server_name("localhost").unwrap());
    let conn = ch
        .connect(&addr, Duration::from_secs(10))
        .expect("mTLS connect");
    calls(&ch, conn, 300);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        TlsServer::from_pem_files(&ca_pem, &ca_pem, None).is_err(),
        "no key in a cert file"
    );
}

#[test]
fn a_server_from_another_ca_is_refused_at_connect() {
    let (ca, other) = (Ca::new("server CA"), Ca::new("other CA"));
    let srv = ca.server();
    let (_server, addr) = serve(TlsServer::new(srv.chain(), srv.key(), None).unwrap());
    let (_c, ch) = client(TlsClient::new(other.roots(), None).unwrap());
    let t0 = Instant::now();
    let e = ch
        .connect(&addr, Duration::from_secs(10))
        .expect_err("untrusted server");
    assert!(matches!(e, RpcError::Io(_)), "{e}");
    assert!(e.to_string().contains("UnknownIssuer"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(5));
    // The right name matters too: a certificate for other names is refused.
    let (_c, ch) = client(
        TlsClient::new(ca.roots(), None)
            .unwrap()
            .server_name("elsewhere.example")
            .unwrap(),
    );
    let e = ch
        .connect(&addr, Duration::from_secs(10))
        .expect_err("wrong name");
    assert!(e.to_string().contains("not valid for name"), "{e}");
}

#[test]
fn a_client_without_the_required_certificate_gets_no_calls_through() {
    let (ca, other) = (Ca::new("CA"), Ca::new("other"));
    let srv = ca.server();
    let tls = TlsServer::new(srv.chain(), srv.key(), Some(ca.roots())).unwrap();
    let (_server, addr) = serve(tls);
    let stranger = other.client();
    for id in [None, Some((stranger.chain(), stranger.key()))] {
        let had_cert = id.is_some();
        let (_c, ch) = client(TlsClient::new(ca.roots(), id).unwrap());
        let t0 = Instant::now();
        // TLS 1.3 lets the client finish first; the server's refusal then closes the stream.
        match ch.connect(&addr, Duration::from_secs(10)) {
            Err(RpcError::Disconnected) | Err(RpcError::Io(_)) => {}
            other => panic!("client (certificate from another CA: {had_cert}) got {other:?}"),
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "refusal took too long"
        );
    }
    // A client with a good certificate still gets in.
    let cl = ca.client();
    let (_c, ch) = client(TlsClient::new(ca.roots(), Some((cl.chain(), cl.key()))).unwrap());
    let conn = ch
        .connect(&addr, Duration::from_secs(10))
        .expect("good client");
    calls(&ch, conn, 20);
}

/// What a cutting server sends after the handshake, given its session.
type Cut = dyn FnOnce(&mut rustls::ServerConnection) -> Vec<u8> + Send;

/// A TLS server that completes the handshake, reads a little, then sends `tail(session)` raw
/// and closes the socket without `close_notify`.
fn cutting_server(leaf: &Leaf, tail: Box<Cut>) -> (String, std::thread::JoinHandle<()>) {
    let tls = TlsServer::new(leaf.chain(), leaf.key(), None).unwrap();
    let cfg = rustls_config(&tls);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let t = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut c = rustls::ServerConnection::new(cfg).unwrap();
        while c.is_handshaking() {
            c.complete_io(&mut s).unwrap();
        }
        // The client's Connect frame (a header's worth, at least).
        let _ = c.complete_io(&mut s);
        let bytes = tail(&mut c);
        s.write_all(&bytes).unwrap();
        s.shutdown(std::net::Shutdown::Both).unwrap();
    });
    (addr, t)
}

/// The rustls server config inside a `TlsServer`, for a hand-driven server.
fn rustls_config(tls: &TlsServer) -> Arc<rustls::ServerConfig> {
    tls.rustls_config()
}

#[test]
fn a_stream_cut_short_is_an_error_not_a_hang() {
    let ca = Ca::new("CA");
    let srv = ca.server();
    let frame = FrameHeader {
        payload_len: 100,
        ..FrameHeader::new(FrameKind::ConnectAck)
    }
    .encode();
    // 1: half a TLS record; 2: a whole record holding half a frame; both then EOF without
    // close_notify.
    let cuts: Vec<Box<Cut>> = vec![
        Box::new(move |c| {
            c.writer().write_all(&frame).unwrap();
            let mut out = Vec::new();
            c.write_tls(&mut out).unwrap();
            out.truncate(out.len() / 2);
            out
        }),
        Box::new(move |c| {
            c.writer().write_all(&frame[..20]).unwrap();
            let mut out = Vec::new();
            c.write_tls(&mut out).unwrap();
            out
        }),
    ];
    for (k, cut) in cuts.into_iter().enumerate() {
        let (addr, t) = cutting_server(&srv, cut);
        let (_c, ch) = client(TlsClient::new(ca.roots(), None).unwrap());
        let t0 = Instant::now();
        let r = ch.connect(&addr, Duration::from_secs(10));
        t.join().unwrap();
        assert!(
            matches!(r, Err(RpcError::Disconnected)),
            "cut {k}: expected Disconnected, got {r:?}"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "cut {k} took too long"
        );
    }
}

#[test]
fn garbage_and_plain_frames_at_a_tls_server_do_not_stop_it() {
    let ca = Ca::new("CA");
    let srv = ca.server();
    let (_server, addr) = serve(TlsServer::new(srv.chain(), srv.key(), None).unwrap());
    // A plain-TCP NIC client: its frames are not TLS records.
    let (_p, ph) = start(Tcp::client(), config(1), false);
    assert!(ph.connect(&addr, Duration::from_millis(2000)).is_err());
    // Raw bytes, and a handshake cut in the middle.
    let mut raw = TcpStream::connect(&addr).unwrap();
    raw.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 1, 2, 3])
        .unwrap();
    drop(raw);
    let (_c, ch) = client(TlsClient::new(ca.roots(), None).unwrap());
    let conn = ch
        .connect(&addr, Duration::from_secs(10))
        .expect("TLS client after garbage");
    calls(&ch, conn, 20);
}

#[test]
fn a_peer_that_never_finishes_its_handshake_is_dropped() {
    let ca = Ca::new("CA");
    let srv = ca.server();
    let tls = TlsServer::new(srv.chain(), srv.key(), None).unwrap();
    let t = Tcp::listen_tls("127.0.0.1:0", tls)
        .unwrap()
        .with_handshake_timeout(Duration::from_millis(200));
    let addr = t.local_addr();
    let (_server, _) = start(t, config(1), true);
    let mut idle = TcpStream::connect(&addr).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let t0 = Instant::now();
    let mut b = [0u8; 16];
    // The server closes it: end of stream (or a reset), well before the read timeout.
    match std::io::Read::read(&mut idle, &mut b) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("expected the server to close the stream, got {other:?}"),
    }
    assert!(
        t0.elapsed() < Duration::from_secs(4),
        "closed after {:?}",
        t0.elapsed()
    );
    // A real client is still served.
    let (_c, ch) = client(TlsClient::new(ca.roots(), None).unwrap());
    let conn = ch
        .connect(&addr, Duration::from_secs(10))
        .expect("TLS client");
    calls(&ch, conn, 20);
}
