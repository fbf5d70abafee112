//! The image-compression service (RPCAcc §IV-H) as a design table: each of its three designs'
//! costs per request, capacity on a number of host cores and what bounds it, and under a
//! Poisson stream of requests its offered utilisation and latency; with the checks of the
//! service's own settings (the request rate and the host cores) and the warning for a stream
//! that loads a design near its capacity. `optimus sim --workload image-service` prints it.

use super::service::{self, Load};
use super::RpcAccConfig;
use crate::workload::TraceSource;
use crate::{Result, SimError};

/// Fewest requests per second a rate may be: the smallest positive rate a config takes
/// (docs/simulator.md), far below one request in the age of the universe, and far above the
/// rates whose mean gap between requests, 1e9 / rate ns, overflows to infinity.
pub const MIN_RATE_PER_S: f64 = 1e-9;
/// Most requests per second a rate may be, the largest rate a config takes.
pub const MAX_RATE_PER_S: f64 = 1e12;

/// Requests drawn for a rate (the first tenth warm the queues up).
pub const LOAD_REQUESTS: usize = 100_000;

/// The names of the service's designs, in the order [`designs`] gives them.
pub const DESIGNS: [&str; 3] = ["cpu_only", "protoacc_pcie", "rpcacc"];

/// The service's request rate (`--rate`, or a varied `rate`): requests per second, from
/// [`MIN_RATE_PER_S`] to [`MAX_RATE_PER_S`]; `rate` is `None` for a value that is not a
/// number, and `written` the value as given, which an error repeats.
///
/// # Errors
/// [`SimError::Param`] for a rate out of range or not a number.
pub fn checked_rate(rate: Option<f64>, written: &dyn std::fmt::Display) -> Result<f64> {
    match rate {
        Some(r) if (MIN_RATE_PER_S..=MAX_RATE_PER_S).contains(&r) => Ok(r),
        _ => Err(SimError::Param(format!(
            "--rate must be a number of requests per second from {MIN_RATE_PER_S:e} to \
             {MAX_RATE_PER_S:e}, not {written}"
        ))),
    }
}

/// The service's host cores (`--cores`, or varied `cores`): a whole number from 1 to
/// [`service::MAX_HOST_CORES`].
///
/// # Errors
/// [`SimError::Param`] for any other number.
pub fn checked_cores(cores: u64) -> Result<u32> {
    match u32::try_from(cores) {
        Ok(n) if (1..=service::MAX_HOST_CORES).contains(&n) => Ok(n),
        _ => Err(SimError::Param(format!(
            "--cores must be a whole number from 1 to {}",
            service::MAX_HOST_CORES
        ))),
    }
}

/// One design of the image service: its costs per request, its capacity and what bounds it
/// and, under a rate, the stream's offered utilisation and its latency (`None` without a
/// rate; the latency also at or past the design's capacity).
#[derive(Debug, Clone)]
pub struct ServiceDesign {
    /// One of [`DESIGNS`].
    pub design: &'static str,
    /// Its mean costs per request.
    pub costs: service::Design,
    /// Its capacity on the cores.
    pub requests_per_s: f64,
    /// What bounds its capacity.
    pub bound: &'static str,
    /// The stream's offered utilisation.
    pub rho: Option<f64>,
    /// Latency under the stream ([`LOAD_REQUESTS`] requests).
    pub under_load: Option<Load>,
}

/// The image service's designs: each one's host time, low-load latency, capacity with
/// `cores` (the mean over the requests' avatar sizes, `service.avatar_mix`) and, with a
/// `rate`, offered utilisation and latency under a Poisson stream. The messages' traces come
/// from `source`. See [`near_capacity`] for the warning a caller should give.
///
/// # Errors
/// A configuration or trace the service model refuses.
pub fn designs(
    cfg: &RpcAccConfig,
    cores: u32,
    rate: Option<f64>,
    source: &mut dyn TraceSource,
) -> Result<Vec<ServiceDesign>> {
    let traced = service::messages(cfg, source)?;
    let mix = service::mix(cfg, &traced, source)?;
    Ok(DESIGNS
        .into_iter()
        .zip(mix.mean.designs())
        .zip(mix.variants())
        .map(|((design, d), variants)| ServiceDesign {
            design,
            costs: d,
            requests_per_s: d.rate(cores),
            bound: d.bound(cores),
            rho: rate.map(|r| d.utilisation(cores, r)),
            under_load: rate
                .and_then(|r| service::under_load(&variants, cores, r, LOAD_REQUESTS, cfg.seed)),
        })
        .collect())
}

/// A warning for each design that a stream of `rate` requests a second on `cores` cores
/// loads past [`service::NEAR_CAPACITY_RHO`] and below its capacity.
pub fn near_capacity(cores: u32, rate: f64, designs: &[ServiceDesign]) -> Vec<String> {
    designs
        .iter()
        .filter_map(|d| {
            let rho = d
                .rho
                .filter(|&rho| rho > service::NEAR_CAPACITY_RHO && rho < 1.0)?;
            Some(format!(
                "warning: {rate} requests/s on {cores} core(s) loads {} to rho = {rho:.3} of \
                 its capacity ({:.0} requests/s, {}): its mean and 99th percentile over \
                 {LOAD_REQUESTS} requests are not steady-state values (its queues have not \
                 settled; they fall short and move with the seed)",
                d.design, d.requests_per_s, d.bound
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use optimus_core::binary::EngineTraces;

    #[test]
    fn a_rate_is_taken_from_its_minimum_to_its_maximum() {
        for rate in [MIN_RATE_PER_S, 1e-8, 150_000.0, MAX_RATE_PER_S] {
            assert_eq!(checked_rate(Some(rate), &rate).unwrap(), rate);
        }
        // Out of the range, as a config's rates; at 1e-300, 1e9 / rate, the mean gap between
        // requests, is infinite.
        for rate in [0.0, -1.0, 1e-10, 1e-300, 2e12, f64::INFINITY, f64::NAN] {
            let err = checked_rate(Some(rate), &rate).unwrap_err().to_string();
            assert!(
                err.contains("--rate must be a number of requests per second from 1e-9 to 1e12"),
                "{rate}: {err}"
            );
        }
    }

    #[test]
    fn a_refused_rate_is_echoed_as_written() {
        let err = checked_rate(Some(2e12), &"2.0e12").unwrap_err();
        assert!(err.to_string().ends_with(", not 2.0e12"), "{err}");
        // A varied `rate` that is not a number.
        let v = serde_json::Value::Bool(true);
        let err = checked_rate(v.as_f64(), &v).unwrap_err();
        assert!(err.to_string().ends_with(", not true"), "{err}");
    }

    /// The image service's designs on 16 cores, under `rate` requests a second.
    fn sixteen_cores(rate: Option<f64>) -> Vec<ServiceDesign> {
        designs(&RpcAccConfig::default(), 16, rate, &mut EngineTraces).unwrap()
    }

    #[test]
    fn a_load_gives_its_utilisation_and_warns_near_capacity() {
        let idle = sixteen_cores(None);
        assert!(idle.iter().all(|d| d.rho.is_none()));
        assert!(idle.iter().all(|d| !d.bound.is_empty()));
        // Just under ProtoACC-PCIe's capacity: past CPU-only's, light for RPCAcc.
        let rate = 0.99 * idle[1].requests_per_s;
        let loaded = sixteen_cores(Some(rate));
        let rho: Vec<f64> = loaded.iter().map(|d| d.rho.unwrap()).collect();
        assert!(
            rho[0] > 1.0 && (rho[1] - 0.99).abs() < 1e-9 && rho[2] < 0.6,
            "{rho:?}"
        );
        assert_eq!(loaded[1].under_load.unwrap().rho, rho[1]);
        let warnings = near_capacity(16, rate, &loaded);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("protoacc_pcie") && warnings[0].contains("not steady-state"),
            "{warnings:?}"
        );
        let half = 0.5 * idle[1].requests_per_s;
        assert!(near_capacity(16, half, &sixteen_cores(Some(half))).is_empty());
        // The JSON gives each design's utilisation and bound.
        let doc = crate::sweep::service_outcome(16, Some(rate), &loaded)
            .unwrap()
            .report;
        let pcie = &doc["designs"][1];
        assert_eq!(pcie["rho"].as_f64(), Some(rho[1]));
        assert_eq!(pcie["under_load"]["rho"].as_f64(), Some(rho[1]));
        assert_eq!(pcie["bound"], loaded[1].bound);
        assert!(doc["designs"][0]["under_load"].is_null());
    }

    #[test]
    fn a_slow_stream_waits_for_nothing() {
        // One request every 3 years (1e-8 a second) or 32 (1e-9): each finds every core and
        // the shared resource free, so its latency is the low-load one, however large the
        // arrival times grow (past 1e21 ns, where a double's step exceeds the latency).
        let design = service::Design {
            host_ns: 5_000.0,
            latency_ns: 16_384.0,
            cap_ns: 1_000.0,
            ..service::Design::default()
        };
        for rate in [MIN_RATE_PER_S, 1e-8, 1e-6, 1.0] {
            let load = design.under_load(1, rate, LOAD_REQUESTS, 7).unwrap();
            assert_eq!((load.mean_ns, load.p99_ns), (16_384.0, 16_384.0), "{rate}");
        }
    }

    #[test]
    fn cores_are_whole_numbers_from_one_to_the_most() {
        assert_eq!(checked_cores(1).unwrap(), 1);
        assert_eq!(checked_cores(1024).unwrap(), 1024);
        for bad in [0, 1025, u64::from(u32::MAX) + 1] {
            assert_eq!(
                checked_cores(bad).unwrap_err().to_string(),
                "--cores must be a whole number from 1 to 1024"
            );
        }
    }

    fn design(name: &'static str, rho: Option<f64>) -> ServiceDesign {
        ServiceDesign {
            design: name,
            costs: service::Design::default(),
            requests_per_s: 1000.0,
            bound: "host",
            rho,
            under_load: None,
        }
    }

    #[test]
    fn only_designs_loaded_near_but_below_capacity_are_warned_of() {
        let ds = [
            design("calm", Some(0.5)),
            design("near", Some(0.97)),
            design("past", Some(1.2)),
            design("unloaded", None),
        ];
        let w = near_capacity(2, 970.0, &ds);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with(
                "warning: 970 requests/s on 2 core(s) loads near to rho = 0.970 of its \
                 capacity (1000 requests/s, host)"
            ),
            "{}",
            w[0]
        );
        assert!(w[0].contains("over 100000 requests"));
    }
}
