//! One design's cost of a request of a service (host time, low-load latency, the time each
//! shared resource spends on it), the rate and bound it gives with some host cores, and its
//! latency under a Poisson stream of requests, alone or as a mix of request kinds.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use serde::Serialize;

use super::gateway::Occupancy;

/// The most host cores the service runs on: 1,024, past the largest servers' core counts. A
/// load run keeps a clock per core, so this bounds its memory.
pub const MAX_HOST_CORES: u32 = 1024;

/// One design's cost of one request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Design {
    /// Host core time per request (ns): the handler from start to its last doorbell.
    pub host_ns: f64,
    /// Request latency at low load (ns): request on the wire to response on the wire.
    pub latency_ns: f64,
    /// Time (ns) each shared resource the design uses spends on a request (`host_cores` is
    /// 0: the host's time is `host_ns`, spread over however many cores serve).
    pub shared: Occupancy,
    /// Smallest time between requests any shared resource allows (ns): the busiest of those
    /// the design uses (the line and PCIe per direction, and on the accelerators the
    /// deserializer, the compute unit, the serializer and the memcpy engine).
    pub cap_ns: f64,
    /// The shared resource that takes `cap_ns`, named as [`super::gateway::Occupancy`] names
    /// it.
    pub cap_by: &'static str,
}

/// Offered utilisation ([`Load::rho`]) past which a load run of some 10^5 requests is not a
/// steady-state value: near 1 the queues take longer than that to settle.
pub const NEAR_CAPACITY_RHO: f64 = 0.95;

/// What [`Design::bound`] names when the host cores bound the rate.
pub const HOST_CORES: &str = "host cores";

impl Design {
    /// A design whose shared resources take `shared` each, capped by the busiest
    /// ([`busiest`]).
    pub(crate) fn new(host_ns: f64, latency_ns: f64, shared: Occupancy) -> Self {
        let (cap_by, cap_ns) = busiest(shared.named().into_iter().skip(1));
        Self {
            host_ns,
            latency_ns,
            shared,
            cap_ns,
            cap_by,
        }
    }

    /// The mean request of `variants` (share, cost; the shares summing to 1): its host
    /// time, latency and shared resources' times are the share-weighted means, so its rate
    /// is the mix's, and the busiest of those caps it.
    pub fn mean(variants: &[(f64, Design)]) -> Self {
        let sum = |f: fn(&Design) -> f64| variants.iter().map(|(w, d)| w * f(d)).sum();
        Self::new(
            sum(|d| d.host_ns),
            sum(|d| d.latency_ns),
            Occupancy::weighted(variants.iter().map(|(w, d)| (*w, d.shared))),
        )
    }

    /// Time (ns) the shared resource named `resource` spends on a request: `cap_ns` for the
    /// one that caps the design.
    fn time_at(&self, resource: &str) -> f64 {
        if resource == self.cap_by {
            self.cap_ns
        } else {
            self.shared.of(resource)
        }
    }

    /// Requests per second with `cores` host cores.
    pub fn rate(&self, cores: u32) -> f64 {
        (f64::from(cores) / self.host_ns).min(1.0 / self.cap_ns) * 1e9
    }

    /// What bounds [`Design::rate`] with `cores` host cores: [`HOST_CORES`], or the shared
    /// resource [`Design::cap_by`]; the host cores on a tie.
    pub fn bound(&self, cores: u32) -> &'static str {
        if self.host_ns / f64::from(cores) >= self.cap_ns {
            HOST_CORES
        } else {
            self.cap_by
        }
    }

    /// Offered utilisation of a stream of `per_s` requests a second with `cores` host cores:
    /// the rate times the time its bottleneck spends on a request, `per_s` over
    /// [`Design::rate`]. At 1 or more the queues grow without bound.
    pub fn utilisation(&self, cores: u32, per_s: f64) -> f64 {
        per_s / self.rate(cores)
    }

    /// Request latency when requests arrive as a Poisson stream of `per_s` a second to
    /// `cores` host cores: a request waits for the first free core (first come, first served;
    /// `host_ns` each), then for the shared resource that caps the design (one at a time,
    /// `cap_ns` each), and otherwise takes its low-load `latency_ns`. `requests` arrivals are
    /// drawn from `seed`; the first tenth warm the queues up and are not counted. `None`
    /// when the stream is at or above the design's rate, where the queues grow without
    /// bound, when there are no requests to count, or when `cores` is not 1 to
    /// [`MAX_HOST_CORES`]. Near the rate (a [`Load::rho`] close to 1) the queues take far
    /// longer than `requests` arrivals to settle, and the result is not a steady-state
    /// value: it falls short of it and moves with `seed`.
    pub fn under_load(&self, cores: u32, per_s: f64, requests: usize, seed: u64) -> Option<Load> {
        under_load(&[(1.0, *self)], cores, per_s, requests, seed)
    }
}

/// [`Design::under_load`] for a mix of requests: each arrival is `variants[k].1` with
/// probability `variants[k].0` (the shares summing to 1), drawn from `seed` after its gap
/// (one kind of request draws nothing). The rate, the offered utilisation and the resource
/// that caps the stream are those of the mean request ([`Design::mean`]); each request holds
/// the cores and that resource for its own time and adds its own low-load latency.
pub fn under_load(
    variants: &[(f64, Design)],
    cores: u32,
    per_s: f64,
    requests: usize,
    seed: u64,
) -> Option<Load> {
    let mean = match variants {
        [(_, one)] => *one,
        _ => Design::mean(variants),
    };
    let warm = requests / 10;
    let runs = (1..=MAX_HOST_CORES).contains(&cores) && per_s > 0.0 && !variants.is_empty();
    if !(runs && per_s < mean.rate(cores)) || requests <= warm {
        return None;
    }
    // Per kind: the share of requests up to it, and its times at the cores and at the cap.
    let mut upto = 0.0;
    let kinds: Vec<(f64, f64, f64, f64)> = variants
        .iter()
        .map(|(w, d)| {
            upto += w;
            (upto, d.host_ns, d.time_at(mean.cap_by), d.latency_ns)
        })
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mean_gap_ns = 1e9 / per_s;
    // Each core's next free time, the earliest on top. Cores are alike, so which of
    // those free at the same time takes a request changes nothing.
    let mut core_free: BinaryHeap<Reverse<Ns>> = (0..cores).map(|_| Reverse(Ns(0.0))).collect();
    let (mut arrival, mut shared_free) = (0.0f64, 0.0f64);
    let mut latency = Vec::with_capacity(requests - warm);
    for i in 0..requests {
        // An exponential gap: -ln(1 - u) with u uniform in [0, 1).
        arrival += -(1.0 - crate::uniform(&mut rng)).ln() * mean_gap_ns;
        let (_, host_ns, cap_ns, latency_ns) = match kinds.as_slice() {
            [one] => *one,
            _ => {
                // The first kind whose share so far passes a uniform draw in [0, 1)
                // (the last, should rounding leave the sum short of it).
                let u = crate::uniform(&mut rng) * upto;
                kinds[kinds.partition_point(|k| k.0 <= u).min(kinds.len() - 1)]
            }
        };
        let mut first = core_free.peek_mut().expect("at least one core");
        let Reverse(Ns(free)) = *first;
        let start = free.max(arrival);
        *first = Reverse(Ns(start + host_ns));
        drop(first);
        let shared = shared_free.max(start);
        shared_free = shared + cap_ns;
        if i >= warm {
            latency.push(latency_ns + (shared - arrival));
        }
    }
    latency.sort_by(f64::total_cmp);
    let n = latency.len();
    Some(Load {
        mean_ns: latency.iter().sum::<f64>() / n as f64,
        p99_ns: latency[(n * 99).div_ceil(100) - 1],
        rho: mean.utilisation(cores, per_s),
    })
}

/// The busiest of `resources` (name, ns per request) and its time; the first named on a tie.
pub(crate) fn busiest(
    resources: impl IntoIterator<Item = (&'static str, f64)>,
) -> (&'static str, f64) {
    resources.into_iter().fold(
        ("", f64::NEG_INFINITY),
        |best, r| if r.1 > best.1 { r } else { best },
    )
}

/// A time (ns) ordered by [`f64::total_cmp`], as a heap needs.
#[derive(Clone, Copy, Debug)]
struct Ns(f64);

impl PartialEq for Ns {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Ns {}

impl PartialOrd for Ns {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ns {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Latency of a stream of requests (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Load {
    /// Mean.
    pub mean_ns: f64,
    /// 99th percentile.
    pub p99_ns: f64,
    /// Offered utilisation ([`Design::utilisation`]): the stream's rate times the time the
    /// design's bottleneck spends on a request. Near 1 the mean and percentile of a finite
    /// run are not steady-state values.
    pub rho: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpcacc::service::{messages, run};
    use crate::rpcacc::RpcAccConfig;
    use optimus_core::binary::EngineTraces as Engine;

    #[test]
    fn a_shared_cap_queues_requests_from_every_core() {
        // Four cores, each 4 µs a request, behind a resource that takes 1 µs each: the
        // cores allow 1 M/s, the resource too; at 0.9 M/s requests also queue for the
        // resource, so they wait longer than behind the cores alone.
        let capped = Design {
            host_ns: 4000.0,
            latency_ns: 0.0,
            cap_ns: 1000.0,
            ..Design::default()
        };
        let uncapped = Design {
            cap_ns: 1e-3,
            ..capped
        };
        let a = capped.under_load(4, 0.9e6, 100_000, 3).unwrap();
        let b = uncapped.under_load(4, 0.9e6, 100_000, 3).unwrap();
        assert!(a.mean_ns > b.mean_ns + 300.0, "{a:?} {b:?}");
    }

    #[test]
    fn a_load_gives_its_offered_utilisation() {
        // Two cores of 4 µs each (500 k/s) behind a resource of 1 µs (1 M/s): the cores bind.
        let d = Design {
            host_ns: 4000.0,
            latency_ns: 0.0,
            cap_ns: 1000.0,
            cap_by: "serializer",
            ..Design::default()
        };
        assert_eq!(d.bound(2), HOST_CORES);
        assert_eq!(d.bound(8), "serializer");
        let l = d.under_load(2, 400e3, 10_000, 1).unwrap();
        assert!((l.rho - 0.8).abs() < 1e-12, "{l:?}");
        assert!((d.utilisation(8, 400e3) - 0.4).abs() < 1e-12);
        assert!(d.utilisation(2, 500e3) >= 1.0);
    }

    #[test]
    fn the_earliest_free_core_takes_each_request_as_a_scan_would() {
        let cfg = RpcAccConfig::default();
        let svc = run(&cfg, &messages(&cfg, &mut Engine).unwrap());
        for d in svc.designs() {
            for (cores, share) in [(1, 0.5), (3, 0.9), (16, 0.7), (16, 0.99), (1024, 0.8)] {
                let per_s = share * d.rate(cores);
                let heap = d.under_load(cores, per_s, 20_000, 11).unwrap();
                assert_eq!(heap, under_load_by_scan(&d, cores, per_s, 20_000, 11));
            }
        }
    }

    #[test]
    fn a_mix_of_requests_draws_each_kind_by_its_share() {
        // At a light load nothing waits: the mean latency is the shares' mean of the two
        // kinds' latencies, and the 99th percentile the long kind's.
        let kind = |latency_ns: f64| Design {
            host_ns: 100.0,
            latency_ns,
            cap_ns: 1e-3,
            ..Design::default()
        };
        for (share, mean) in [(0.5, 3000.0), (0.9, 1400.0)] {
            let mix = [(share, kind(1000.0)), (1.0 - share, kind(5000.0))];
            let l = under_load(&mix, 1, 1e3, 100_000, 7).unwrap();
            // The binomial spread of 90,000 draws: well under 1 % of the mean.
            assert!((l.mean_ns - mean).abs() < 0.01 * mean, "{share} {l:?}");
            assert_eq!(l.p99_ns, 5000.0, "{share}");
            assert_eq!(l.rho, 1e3 / Design::mean(&mix).rate(1));
        }
        // One kind draws no sizes: the stream is the design's own.
        let one = kind(1000.0);
        assert_eq!(
            under_load(&[(1.0, one)], 2, 1e5, 10_000, 3),
            one.under_load(2, 1e5, 10_000, 3)
        );
        assert_eq!(under_load(&[], 1, 1e3, 10_000, 3), None);
    }

    #[test]
    fn a_mix_queues_at_its_mean_bottleneck() {
        // One kind holds the serializer 2 µs and the line 0.5 µs, the other the reverse, 1 µs
        // and 1.6 µs: alone each is capped by its own, mixed half and half the serializer
        // (1.5 µs against 1.05 µs) caps the stream, each request holding it its own time.
        let a = Design::new(
            10.0,
            0.0,
            Occupancy {
                serializer: 2000.0,
                line_in: 500.0,
                ..Occupancy::default()
            },
        );
        let b = Design::new(
            10.0,
            0.0,
            Occupancy {
                serializer: 1000.0,
                line_in: 1600.0,
                ..Occupancy::default()
            },
        );
        assert_eq!((a.cap_by, b.cap_by), ("serializer", "line in"));
        let mix = [(0.5, a), (0.5, b)];
        let mean = Design::mean(&mix);
        assert_eq!((mean.cap_by, mean.cap_ns), ("serializer", 1500.0));
        assert!((mean.rate(64) - 1e9 / 1500.0).abs() < 1e-6);
        // At 0.6 M/s the serializer is 90 % busy: requests queue, though either kind alone
        // at that rate would not be near its cap's 90 %.
        let l = under_load(&mix, 64, 0.6e6, 100_000, 5).unwrap();
        assert!((l.rho - 0.9).abs() < 1e-9, "{l:?}");
        assert!(l.mean_ns > 2000.0, "{l:?}");
        assert_eq!(under_load(&mix, 64, 0.7e6, 100_000, 5), None);
    }

    /// [`Design::under_load`] as it scanned every core per request, the lowest-numbered of
    /// the earliest free taking it.
    fn under_load_by_scan(d: &Design, cores: u32, per_s: f64, requests: usize, seed: u64) -> Load {
        let (warm, mean_gap_ns) = (requests / 10, 1e9 / per_s);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut core_free = vec![0.0f64; cores as usize];
        let (mut arrival, mut shared_free) = (0.0f64, 0.0f64);
        let mut latency = Vec::new();
        for i in 0..requests {
            arrival += -(1.0 - crate::uniform(&mut rng)).ln() * mean_gap_ns;
            let core = (0..core_free.len())
                .min_by(|&a, &b| core_free[a].total_cmp(&core_free[b]))
                .unwrap();
            let start = core_free[core].max(arrival);
            core_free[core] = start + d.host_ns;
            let shared = shared_free.max(start);
            shared_free = shared + d.cap_ns;
            if i >= warm {
                latency.push(d.latency_ns + (shared - arrival));
            }
        }
        latency.sort_by(f64::total_cmp);
        let n = latency.len();
        Load {
            mean_ns: latency.iter().sum::<f64>() / n as f64,
            p99_ns: latency[(n * 99).div_ceil(100) - 1],
            rho: d.utilisation(cores, per_s),
        }
    }
}
