//! Model configurations read from JSON over their defaults: a file names only the parameters
//! it changes, at any depth, and every other keeps the paper's value for its place.
//!
//! Deserializing a partial object on its own would fill its missing fields from its type's
//! default, which is not always the default of the field that holds it: RPCAcc's BlueField-3
//! Arm core is a [`crate::cpu::CpuConfig`] with an IPC of 1.0 where the type's default is
//! the host's 1.2, and a [`crate::rpcacc::LinkConfig`] has no default at all. So the file is
//! merged into the serialized default, object by object, and the result is read.
//!
//! A few parameters follow another unless they are set themselves ([`FOLLOWERS`]): a file or
//! a set of values that moves RPCAcc's PCIe round trip and leaves its MMIO doorbell alone
//! moves the doorbell with it, as `optimus sim --pcie-ns` does.

use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Result, SimError};

/// Reads a `T` from the JSON `text`: objects merge key by key into `T::default()`'s, any
/// other value replaces the default's, and a parameter of [`FOLLOWERS`] that the text leaves
/// out follows its leader where the text sets that. Unknown fields and values of the wrong
/// type are errors that name their path (`bf3.arm.ipc`); malformed JSON names its line and
/// column; the text must be an object.
///
/// # Errors
/// [`SimError::ConfigFile`] as above.
pub fn from_json<T: Serialize + DeserializeOwned + Default>(text: &str) -> Result<T> {
    let mut reader = serde_json::Deserializer::from_str(text);
    let Unique(over) = serde_path_to_error::deserialize(&mut reader)
        .map_err(|e| SimError::ConfigFile(e.to_string()))?;
    reader
        .end()
        .map_err(|e| SimError::ConfigFile(e.to_string()))?;
    if !over.is_object() {
        return Err(SimError::ConfigFile(
            "a config file is one JSON object of parameters".into(),
        ));
    }
    let mut merged =
        serde_json::to_value(T::default()).map_err(|e| SimError::ConfigFile(e.to_string()))?;
    let following = followers_left_to_follow(&over);
    merge(&mut merged, over);
    follow(&mut merged, &following);
    serde_path_to_error::deserialize(merged).map_err(|e| SimError::ConfigFile(e.to_string()))
}

/// `base` with the parameter at each dot-separated path set to its value (`pipelines`,
/// `noc.hop_cycles`, `bf3.arm.ipc`), every other parameter kept but those of [`FOLLOWERS`]
/// whose leader the values set and they do not: how a sweep moves some parameters of a
/// configuration. Later pairs win over earlier ones for the same path.
///
/// # Errors
/// [`SimError::ConfigFile`] naming the path of an unknown parameter or of a value of the
/// wrong type.
pub fn with_values<T: Serialize + DeserializeOwned>(
    base: &T,
    values: &[(&str, Value)],
) -> Result<T> {
    let mut merged = serde_json::to_value(base).map_err(|e| SimError::ConfigFile(e.to_string()))?;
    // Every value, as one object of the paths they set.
    let mut set = Value::Object(Map::new());
    for (path, value) in values {
        let over = path.rsplit('.').fold(value.clone(), |inner, key| {
            Value::Object(std::iter::once((key.to_string(), inner)).collect())
        });
        merge(&mut set, over);
    }
    let following = followers_left_to_follow(&set);
    merge(&mut merged, set);
    follow(&mut merged, &following);
    serde_path_to_error::deserialize(merged).map_err(|e| SimError::ConfigFile(e.to_string()))
}

/// A parameter that follows another unless it is set itself: when a configuration (a file
/// over the defaults, or values over a base) sets `leader` and not `follower`, the follower
/// becomes the leader's new value times `factor`; when it sets both, both are kept.
pub struct Follower {
    /// Dot-separated path of the parameter that follows.
    pub follower: &'static str,
    /// Dot-separated path of the parameter it follows.
    pub leader: &'static str,
    /// The follower's value over the leader's.
    pub factor: f64,
}

/// Every parameter that follows another, in the configuration types that hold both paths
/// (a type without one of them is left alone): RPCAcc's MMIO doorbell (`mmio_ns`) crosses
/// PCIe one way, so it is half the PCIe round trip (`pcie.latency_ns`), as the CLI's
/// `--pcie-ns` sets it.
pub const FOLLOWERS: &[Follower] = &[Follower {
    follower: "mmio_ns",
    leader: "pcie.latency_ns",
    factor: 0.5,
}];

/// The value at dot-separated `path` in `v`, if `v` has one there.
fn at_path<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, key| v.get(key))
}

/// The value at dot-separated `path` in `v`, to change, if `v` has one there.
fn at_path_mut<'a>(v: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    path.split('.').try_fold(v, |v, key| v.get_mut(key))
}

/// The [`FOLLOWERS`] whose leader `set` (the parameters a configuration sets) sets and whose
/// follower it does not.
fn followers_left_to_follow(set: &Value) -> Vec<&'static Follower> {
    FOLLOWERS
        .iter()
        .filter(|f| at_path(set, f.leader).is_some() && at_path(set, f.follower).is_none())
        .collect()
}

/// Sets each of `following` in the merged configuration `merged` to its leader's value
/// times its factor, where `merged` has both parameters and the leader is a number (a
/// leader of the wrong type is left to the deserializer to refuse, naming its path).
fn follow(merged: &mut Value, following: &[&Follower]) {
    for f in following {
        let Some(leader) = at_path(merged, f.leader).and_then(Value::as_f64) else {
            continue;
        };
        if let Some(slot) = at_path_mut(merged, f.follower) {
            *slot = Value::from(leader * f.factor);
        }
    }
}

/// A JSON value whose objects name each key once: a key given twice is an error, where
/// `serde_json::Value` would keep the last and drop the first without a word.
struct Unique(Value);

impl<'de> Deserialize<'de> for Unique {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(UniqueVisitor).map(Unique)
    }
}

/// Builds a [`Unique`]'s value.
struct UniqueVisitor;

impl<'de> Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Unique(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format!("`{key}` is given twice")));
            }
            let Unique(v) = map.next_value()?;
            object.insert(key, v);
        }
        Ok(Value::Object(object))
    }
}

/// Merges `over` into `base`: object members recursively, anything else by replacement.
fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(&key) {
                    Some(slot) => merge(slot, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, over) => *base = over,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::OpConfig;
    use crate::rpcacc::RpcAccConfig;

    #[test]
    fn a_partial_object_keeps_the_defaults_of_its_place() {
        let cfg: RpcAccConfig = from_json(
            r#"{"bf3": {"arm": {"per_field": 100.0}, "pcie": {"latency_ns": 900.0}},
                "pcie": {"bw_gbytes_s": 16.0}}"#,
        )
        .unwrap();
        let paper = RpcAccConfig::default();
        assert_eq!(cfg.bf3.arm.per_field, 100.0);
        // The Arm core's IPC is the BlueField-3 default (1.0), not a CpuConfig's (1.2).
        assert_eq!(cfg.bf3.arm.ipc, paper.bf3.arm.ipc);
        assert_ne!(cfg.bf3.arm.ipc, crate::cpu::CpuConfig::default().ipc);
        assert_eq!(
            (cfg.bf3.pcie.latency_ns, cfg.bf3.pcie.bw_gbytes_s),
            (900.0, paper.bf3.pcie.bw_gbytes_s)
        );
        assert_eq!(
            (cfg.pcie.latency_ns, cfg.pcie.bw_gbytes_s),
            (paper.pcie.latency_ns, 16.0)
        );
        let op: OpConfig = from_json(r#"{"noc": {"mesh": 8}, "pipelines": 3}"#).unwrap();
        assert_eq!((op.noc.mesh, op.pipelines), (8, 3));
        assert_eq!(op.noc.hop_cycles, OpConfig::default().noc.hop_cycles);
        // An empty file object is the paper's configuration; a full one reads back as itself.
        assert_eq!(from_json::<RpcAccConfig>("{}").unwrap(), paper);
        let full = serde_json::to_string(&cfg).unwrap();
        assert_eq!(from_json::<RpcAccConfig>(&full).unwrap(), cfg);
    }

    #[test]
    fn a_key_given_twice_is_an_error_naming_its_place() {
        let err = from_json::<OpConfig>(r#"{"noc": {"mesh": 8}, "noc": {"hop_cycles": 4}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("`noc` is given twice"), "{err}");
        let err = from_json::<OpConfig>(r#"{"noc": {"mesh": 8, "mesh": 4}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("noc") && err.contains("`mesh` is given twice"),
            "{err}"
        );
        // Malformed JSON and trailing characters still name their line and column.
        let err = from_json::<OpConfig>("{\"pipelines\": 2} x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 1 column"), "{err}");
        let op: OpConfig = from_json(r#"{"noc": {"mesh": 8}, "pipelines": 3}"#).unwrap();
        assert_eq!((op.noc.mesh, op.pipelines), (8, 3));
    }

    #[test]
    fn values_move_only_their_parameters_and_unknown_paths_are_named() {
        use serde_json::json;
        let base: RpcAccConfig = from_json(r#"{"clock_mhz": 2000.0}"#).unwrap();
        let moved = with_values(
            &base,
            &[("bf3.arm.ipc", json!(2.0)), ("pcie.latency_ns", json!(70))],
        )
        .unwrap();
        assert_eq!(moved.bf3.arm.ipc, 2.0);
        assert_eq!(moved.pcie.latency_ns, 70.0);
        // Everything else is the base's, including what the base changed.
        let back = with_values(
            &moved,
            &[
                ("bf3.arm.ipc", json!(base.bf3.arm.ipc)),
                ("pcie.latency_ns", json!(base.pcie.latency_ns)),
            ],
        )
        .unwrap();
        assert_eq!(back, base);
        let err = |path: &str, v| with_values(&base, &[(path, v)]).unwrap_err().to_string();
        let unknown = err("bf3.arm.ipcc", json!(1.0));
        assert!(
            unknown.contains("bf3.arm") && unknown.contains("`ipcc`"),
            "{unknown}"
        );
        let op = OpConfig::default();
        let fraction = with_values(&op, &[("pipelines", json!(2.5))]).unwrap_err();
        assert!(fraction.to_string().contains("pipelines"), "{fraction}");
        assert_eq!(
            with_values(&op, &[("noc.mesh", json!(8))])
                .unwrap()
                .noc
                .mesh,
            8
        );
    }

    #[test]
    fn the_mmio_doorbell_follows_the_pcie_round_trip_unless_it_is_set() {
        use serde_json::json;
        let paper = RpcAccConfig::default();
        let read = |text: &str| {
            let cfg: RpcAccConfig = from_json(text).unwrap();
            (cfg.pcie.latency_ns, cfg.mmio_ns)
        };
        // A file: the round trip alone moves the doorbell to half of it; both are kept.
        assert_eq!(read(r#"{"pcie": {"latency_ns": 900}}"#), (900.0, 450.0));
        assert_eq!(
            read(r#"{"pcie": {"latency_ns": 900}, "mmio_ns": 300}"#),
            (900.0, 300.0)
        );
        // The doorbell alone, or PCIe's bandwidth alone, leaves the other as it was.
        assert_eq!(read(r#"{"mmio_ns": 300}"#), (paper.pcie.latency_ns, 300.0));
        assert_eq!(
            read(r#"{"pcie": {"bw_gbytes_s": 16}}"#),
            (paper.pcie.latency_ns, paper.mmio_ns)
        );
        // BlueField-3's PCIe is another link: its round trip moves no doorbell.
        assert_eq!(
            read(r#"{"bf3": {"pcie": {"latency_ns": 900}}}"#),
            (paper.pcie.latency_ns, paper.mmio_ns)
        );
        // Values over a base, as a sweep sets them: the same, over the base's doorbell too.
        let base: RpcAccConfig = from_json(r#"{"mmio_ns": 300}"#).unwrap();
        let moved = |values: &[(&str, serde_json::Value)]| {
            let cfg = with_values(&base, values).unwrap();
            (cfg.pcie.latency_ns, cfg.mmio_ns)
        };
        assert_eq!(moved(&[("pcie.latency_ns", json!(70))]), (70.0, 35.0));
        assert_eq!(moved(&[("pcie", json!({"latency_ns": 70}))]), (70.0, 35.0));
        assert_eq!(
            moved(&[("mmio_ns", json!(20)), ("pcie.latency_ns", json!(70))]),
            (70.0, 20.0)
        );
        assert_eq!(
            moved(&[("clock_mhz", json!(2000))]),
            (paper.pcie.latency_ns, 300.0)
        );
        // A round trip of the wrong type is still refused, naming its path.
        let err = from_json::<RpcAccConfig>(r#"{"pcie": {"latency_ns": "slow"}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("pcie.latency_ns"), "{err}");
    }

    #[test]
    fn bad_files_name_the_path_or_the_line() {
        let err = |text: &str| from_json::<RpcAccConfig>(text).unwrap_err().to_string();
        let unknown = err(r#"{"bf3": {"arm": {"ipcc": 1.0}}}"#);
        assert!(
            unknown.contains("bf3.arm") && unknown.contains("unknown field `ipcc`"),
            "{unknown}"
        );
        let wrong = err(r#"{"pcie": {"latency_ns": "slow"}}"#);
        assert!(
            wrong.contains("pcie.latency_ns") && wrong.contains("invalid type"),
            "{wrong}"
        );
        let syntax = err("{\n  \"seed\": 1,\n  oops\n}");
        assert!(syntax.contains("line 3"), "{syntax}");
        // serde would read an array as the struct's first fields.
        assert!(err("[1, 2]").contains("one JSON object"));
    }
}
