//! DT on the NIC core (RPCAcc's target-aware deserialization and memory-affinity
//! serialization): a [`RecordService`] whose handlers take and return engine v2 records,
//! decoded and encoded either by the application's own core ([`RecordService::app_core`]) or
//! by the soft NIC's ([`RecordService::offload`]).
//!
//! Offloaded, a request arrives at the NIC as wire bytes; the NIC core decodes it into
//! records in a slot of the exchange ([`slots`]) before the worker polls, and the worker's
//! frame carries only the slot's token. When the [`Placement`] puts fields of the request in
//! NIC memory, the NIC decodes the request into its own record and copies only the host fields
//! into the record the handler gets: the handler never sees the NIC-resident ones in its
//! record, and reaches them, if at all, through [`Request::get`], a view into NIC memory whose
//! use is counted ([`updating`]). The handler fills a reply record in the slot's host memory:
//! that is the application's pre-serialization, its host fields written by copy into the
//! record layout, with forwarded host fields copied in by the worker. The NIC core then merges
//! the NIC-resident fields (forwarded from NIC memory, sealed by kernels) into the reply and
//! encodes it (co-serialization). Kernels ([`crate::kernels`]) run wherever DT runs.
//!
//! ```no_run
//! # use optimus_rpc::offload::{RecordService, Placement};
//! # use optimus_rpc::{Nic, NicConfig, NoTransport};
//! # fn demo(schema: optimus_schema::SchemaSet) -> Result<(), optimus_rpc::RpcError> {
//! let svc = RecordService::new(schema, "gw.Gateway")?
//!     .on("Forward", |req, reply| {
//!         let flow = req.get(req.index_of("flow")?);
//!         reply.set(reply.index_of("flow")?, flow.expect("set"))?;
//!         Ok(())
//!     })?
//!     .forward("Forward", "payload", "payload")?;
//! let (mut nic, handle) = Nic::new(NoTransport, NicConfig::default())?;
//! let (nic_dt, app_dt) = svc.offload();
//! nic.set_offload(nic_dt);               // the NIC core decodes and encodes
//! let mut worker = handle.worker()?;     // the app core runs `app_dt` on records
//! # let _ = (worker, app_dt); Ok(()) }
//! ```

mod app_side;
mod hand_back;
mod nic_side;
pub mod placement;
pub(crate) mod slots;
mod split;
pub mod updating;
mod wire;

use std::sync::Arc;

use optimus_core::binary::DecodeOptions;
use optimus_core::{Arena, FieldRef, Record};
use optimus_schema::{Cardinality, MessageId, SchemaSet};

pub use app_side::{AppCoreDt, AppDt};
pub use hand_back::{AutoHandBack, HandBack, HandBackEstimates, PROBE_EVERY};
pub use nic_side::NicDt;
pub use placement::{Placement, PlacementTables, PLACEMENT_PROTO};
pub use updating::FieldUpdating;

use crate::kernels::{FieldKernels, Kernel, Side};
use crate::methods::MethodTable;
use crate::nic::MAX_PENDING;
use crate::typed::{find_service, Failure, DEFAULT_KERNEL_LIMIT};
use crate::RpcError;
use updating::AccessCounters;

/// A record handler: reads the request, fills the reply (an empty record of the output type).
pub type RecordFn =
    dyn for<'r> Fn(&Request<'r>, &Reply<'r>) -> Result<(), Failure> + Send + Sync + 'static;

/// One method: its types, handler, kernels and forwarded fields.
#[derive(Clone)]
pub(crate) struct MethodDt {
    pub(crate) name: String,
    pub(crate) input: MessageId,
    pub(crate) output: MessageId,
    pub(crate) handler: Option<Arc<RecordFn>>,
    pub(crate) kernels: FieldKernels,
    /// `(request field, reply field)`: the reply gets the request's value unless the
    /// handler set the field; in reply field-number order.
    pub(crate) forward: Vec<(usize, usize)>,
}

/// A `.proto` service with record handlers, run with DT on the app core or on the NIC core.
/// See the module docs.
#[derive(Clone)]
pub struct RecordService {
    schema: Arc<SchemaSet>,
    table: MethodTable,
    methods: Vec<MethodDt>,
    placement: Placement,
    updating: Option<FieldUpdating>,
    hand_back: Option<HandBack>,
    decode: DecodeOptions,
    kernel_limit: usize,
}

impl RecordService {
    /// The service `name` of `schema` (full, or a unique short name), with no handlers: a
    /// method without one answers [`crate::Status::Unavailable`].
    ///
    /// # Errors
    /// [`RpcError::Config`] when there is no such service.
    pub fn new(schema: impl Into<Arc<SchemaSet>>, name: &str) -> Result<Self, RpcError> {
        let schema = schema.into();
        let svc = find_service(&schema, name)?;
        let table = MethodTable::for_service(&schema, svc)?;
        let methods = svc
            .methods
            .iter()
            .map(|m| MethodDt {
                name: m.name.clone(),
                input: m.input,
                output: m.output,
                handler: None,
                kernels: FieldKernels::default(),
                forward: Vec::new(),
            })
            .collect();
        Ok(Self {
            schema,
            table,
            methods,
            placement: Placement::new(),
            updating: None,
            hand_back: None,
            decode: DecodeOptions::default(),
            kernel_limit: DEFAULT_KERNEL_LIMIT,
        })
    }

    fn method_mut(&mut self, name: &str) -> Result<&mut MethodDt, RpcError> {
        let id = self.method_id(name)?;
        Ok(&mut self.methods[usize::from(id)])
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

    /// The name of method `id`.
    pub fn method_name(&self, id: u16) -> Option<&str> {
        self.methods.get(usize::from(id)).map(|m| m.name.as_str())
    }

    /// The schema.
    pub fn schema(&self) -> &Arc<SchemaSet> {
        &self.schema
    }

    /// Sets method `name`'s handler.
    ///
    /// # Errors
    /// [`RpcError::Config`] for an unknown method.
    pub fn on(
        mut self,
        name: &str,
        f: impl for<'r> Fn(&Request<'r>, &Reply<'r>) -> Result<(), Failure> + Send + Sync + 'static,
    ) -> Result<Self, RpcError> {
        self.method_mut(name)?.handler = Some(Arc::new(f));
        Ok(self)
    }

    /// The reply's field `to` of method `name` gets the request's field `from` (same kind and
    /// cardinality) unless the handler set it: a packet's payload passing through a gateway.
    /// The side that holds the reply field's memory copies it: the NIC for a NIC-resident
    /// field, which then never reaches the app core.
    ///
    /// # Errors
    /// [`RpcError::Config`] for an unknown method or field, or fields that do not match.
    pub fn forward(mut self, name: &str, from: &str, to: &str) -> Result<Self, RpcError> {
        let schema = self.schema.clone();
        let m = self.method_mut(name)?;
        let find = |id: MessageId, field: &str| {
            let ty = schema.message(id);
            ty.fields
                .iter()
                .position(|f| f.name == field)
                .ok_or_else(|| RpcError::Config(format!("{} has no field {field}", ty.full_name)))
        };
        let (fi, ti) = (find(m.input, from)?, find(m.output, to)?);
        let (f, t) = (
            &schema.message(m.input).fields[fi],
            &schema.message(m.output).fields[ti],
        );
        if f.kind != t.kind
            || f.cardinality == Cardinality::Map
            || f.is_list() != t.is_list()
            || f.message != t.message
            || f.enum_type != t.enum_type
        {
            return Err(RpcError::Config(format!(
                "{name}: request field {from} and reply field {to} differ in type"
            )));
        }
        m.forward.push((fi, ti));
        // Kept in reply field-number order, the order co-serialization appends them in.
        let reply_type = schema.message(m.output);
        m.forward
            .sort_by_key(|&(_, to)| reply_type.fields[to].number);
        Ok(self)
    }

    /// Runs `chain` on the `bytes` field `field` of method `name`'s request (opened after
    /// decoding) or reply (sealed before encoding), wherever DT runs; as
    /// [`crate::TypedService::with_kernels`].
    ///
    /// # Errors
    /// [`RpcError::Config`] for an unknown method or field, or a field that is not `bytes`.
    pub fn with_kernels(
        mut self,
        name: &str,
        side: Side,
        field: &str,
        chain: Vec<Kernel>,
    ) -> Result<Self, RpcError> {
        let schema = self.schema.clone();
        let m = self.method_mut(name)?;
        m.kernels
            .add(&schema, (m.input, m.output), side, field, chain)?;
        Ok(self)
    }

    /// The most bytes a kernel may open a field to; 16 MiB by default.
    pub fn with_kernel_limit(mut self, limit: usize) -> Self {
        self.kernel_limit = limit;
        self
    }

    /// Decoding limits for requests.
    pub fn with_decode_options(mut self, opts: DecodeOptions) -> Self {
        self.decode = opts;
        self
    }

    /// Which fields live in NIC memory when DT runs on the NIC core.
    pub fn with_placement(mut self, placement: Placement) -> Self {
        self.placement = placement;
        self
    }

    /// Turns on automatic field updating (off by default: placement stays as declared).
    pub fn with_field_updating(mut self, policy: FieldUpdating) -> Self {
        self.updating = Some(policy);
        self
    }

    /// Lets the NIC core hand calls' DT back to the app core when it is the bottleneck
    /// ([`HandBack`]; off by default: with DT on the NIC core, every call's DT runs there).
    pub fn with_hand_back(mut self, policy: HandBack) -> Self {
        self.hand_back = Some(match policy {
            HandBack::Every(every) => HandBack::Every(every.max(1)),
            HandBack::Auto(auto) => HandBack::Auto(AutoHandBack {
                min_saving: auto.min_saving.max(1.0),
                max_cost_ratio: auto.max_cost_ratio.max(0.0),
            }),
        });
        self
    }

    /// DT on the app core: a [`crate::Handler`] that decodes, runs the record handler and
    /// encodes, all on the thread that serves it (a worker). Placement plays no part.
    pub fn app_core(&self) -> AppCoreDt {
        AppCoreDt::new(self.exchange(0))
    }

    /// DT on the NIC core: the NIC's half ([`crate::Nic::set_offload`]) and the workers'
    /// half (a [`crate::Handler`] that runs record handlers on the records the NIC decoded;
    /// clone it for each worker thread).
    pub fn offload(&self) -> (NicDt, AppDt) {
        let shared = self.exchange(MAX_PENDING);
        let types: Vec<MessageId> = self
            .methods
            .iter()
            .flat_map(|m| [m.input, m.output])
            .collect();
        let tables = Arc::new(PlacementTables::new(&self.schema, &types, &self.placement));
        (
            NicDt::new(shared.clone(), tables, self.updating, self.hand_back),
            AppDt::new(shared),
        )
    }

    fn exchange(&self, slots: usize) -> Arc<Exchange> {
        Arc::new(Exchange {
            slots: slots::Slots::new(self.schema.clone(), slots),
            service: self.table.service.clone(),
            methods: self.methods.clone().into(),
            counters: AccessCounters::new(&self.schema, &self.placement),
            counting: self.updating.is_some(),
            timing: matches!(self.hand_back, Some(HandBack::Auto(_))),
            app_costs: hand_back::AppCosts::default(),
            decode: self.decode.clone(),
            kernel_limit: self.kernel_limit,
        })
    }
}

/// What the NIC's and the workers' halves share.
pub(crate) struct Exchange {
    pub(crate) slots: slots::Slots,
    pub(crate) service: String,
    pub(crate) methods: Arc<[MethodDt]>,
    pub(crate) counters: AccessCounters,
    /// Field updating is on: the app counts its accesses (off, it counts nothing).
    pub(crate) counting: bool,
    /// The automatic hand-back rule is on: the app times a sample of its calls into
    /// `app_costs`.
    pub(crate) timing: bool,
    pub(crate) app_costs: hand_back::AppCosts,
    pub(crate) decode: DecodeOptions,
    pub(crate) kernel_limit: usize,
}

impl Exchange {
    pub(crate) fn schema(&self) -> &SchemaSet {
        &self.slots.schema
    }

    pub(crate) fn method(&self, id: u16) -> Result<&MethodDt, Failure> {
        self.methods.get(usize::from(id)).ok_or_else(|| {
            Failure::new(
                crate::Status::UnknownMethod,
                format!("{} has no method with id {id}", self.service),
            )
        })
    }
}

/// Counters of automatic field updating.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpdatingStats {
    /// Fields moved from NIC to host memory.
    pub moves_to_host: u64,
    /// Fields moved back to NIC memory.
    pub moves_to_nic: u64,
}

/// A request as a handler sees it: its host record, and views of its NIC-resident fields.
pub struct Request<'r> {
    pub(crate) host: Record<'r>,
    pub(crate) nic: Option<Record<'r>>,
    pub(crate) placement: Option<&'r PlacementTables>,
    pub(crate) counters: Option<&'r AccessCounters>,
    /// A request split at the wire: the NIC-resident fields' bytes, decoded into `nic_arena`
    /// on the first use of one of them (a view of NIC memory costs its reader).
    pub(crate) nic_wire: &'r [u8],
    pub(crate) nic_arena: Option<(&'r Arena, &'r DecodeOptions)>,
    pub(crate) lazy: std::cell::OnceCell<Option<Record<'r>>>,
}

impl<'r> Request<'r> {
    /// The host record: every field except the NIC-resident ones.
    pub fn record(&self) -> Record<'r> {
        self.host
    }

    /// The index of field `name`.
    ///
    /// # Errors
    /// A [`Failure`] naming the field when the type has no such field.
    pub fn index_of(&self, name: &str) -> Result<usize, Failure> {
        self.host
            .index_of(name)
            .map_err(|e| Failure::bad_request(e.to_string()))
    }

    /// Whether field `index` lives in NIC memory for this call.
    pub fn is_nic_resident(&self, index: usize) -> bool {
        split::on_nic(self.placement, self.host.type_id(), index)
    }

    fn source(&self, index: usize) -> Record<'r> {
        let id = self.host.type_id();
        if let Some(c) = self.counters {
            c.touch(id, index);
        }
        if !split::on_nic(self.placement, id, index) {
            return self.host;
        }
        self.nic_record().unwrap_or(self.host)
    }

    /// The record of the NIC-resident fields, decoded now if the request was split at the
    /// wire (`None` if those bytes do not decode: the NIC forwards them unchecked).
    pub(crate) fn nic_record(&self) -> Option<Record<'r>> {
        if self.nic.is_some() {
            return self.nic;
        }
        let (arena, opts) = self.nic_arena?;
        *self.lazy.get_or_init(|| {
            let (schema, id) = (self.host.schema(), self.host.type_id());
            optimus_core::engine::decode(schema, id, self.nic_wire, arena, opts).ok()
        })
    }

    /// The single field at `index`, wherever it lives (a NIC-resident one through a view of
    /// NIC memory). Each use of a field that may move is counted for field updating.
    pub fn get(&self, index: usize) -> Option<FieldRef<'r>> {
        self.source(index).get(index)
    }

    /// The elements of the repeated field at `index`, wherever it lives (counted as
    /// [`get`](Self::get)).
    pub fn elements(&self, index: usize) -> impl Iterator<Item = FieldRef<'r>> + 'r {
        self.source(index).elements(index)
    }
}

/// The reply a handler fills: an empty record of the output type in host memory.
pub struct Reply<'r> {
    pub(crate) rec: Record<'r>,
    pub(crate) arena: &'r Arena,
    pub(crate) counters: Option<&'r AccessCounters>,
}

impl<'r> Reply<'r> {
    /// The record.
    pub fn record(&self) -> Record<'r> {
        self.rec
    }

    /// The memory the record lives in: copy shorter-lived strings and bytes into it
    /// ([`Arena::alloc_str`]).
    pub fn arena(&self) -> &'r Arena {
        self.arena
    }

    /// The index of field `name`.
    ///
    /// # Errors
    /// A [`Failure`] naming the field when the type has no such field.
    pub fn index_of(&self, name: &str) -> Result<usize, Failure> {
        self.rec
            .index_of(name)
            .map_err(|e| Failure::bad_request(e.to_string()))
    }

    fn touch(&self, index: usize) {
        if let Some(c) = self.counters {
            c.touch(self.rec.type_id(), index);
        }
    }

    /// Sets the single field at `index` (counted for field updating when it may move).
    ///
    /// # Errors
    /// A [`Failure`] when the value is not of the field's kind.
    pub fn set(&self, index: usize, value: FieldRef<'r>) -> Result<(), Failure> {
        self.touch(index);
        self.rec
            .set(index, value)
            .map_err(|e| Failure::bad_request(format!("reply: {e}")))
    }

    /// Appends to the repeated field at `index` (counted as [`set`](Self::set)).
    ///
    /// # Errors
    /// A [`Failure`] when the value is not of the field's kind.
    pub fn push(&self, index: usize, value: FieldRef<'r>) -> Result<(), Failure> {
        self.touch(index);
        self.rec
            .push(self.arena, index, value)
            .map_err(|e| Failure::bad_request(format!("reply: {e}")))
    }
}

impl From<optimus_core::Error> for Failure {
    fn from(e: optimus_core::Error) -> Self {
        Failure::bad_request(e.to_string())
    }
}
