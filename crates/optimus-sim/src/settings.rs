//! Which settings apply to which run of the Optimus Prime and RPCAcc models: the checks a
//! front end makes of a run's settings before it loads a workload or runs anything, and the
//! kind of run they ask for. The errors name the settings as `optimus sim` spells them.

use crate::sweep::{self, Axis};
use crate::SimError;

/// The image-compression service's workload name (RPCAcc §IV-H).
pub const IMAGE_SERVICE: &str = "image-service";
/// The cloud gateway's workload name (RPCAcc §II-C).
pub const GATEWAY: &str = "gateway";

/// The model a run is asked of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Optimus Prime.
    Op,
    /// RPCAcc.
    RpcAcc,
}

/// What a run asks for, as far as the checks go: the model, the workload and which of the
/// model-specific settings are given.
#[derive(Debug, Clone, Copy)]
pub struct RunSettings<'a> {
    /// The model.
    pub model: Model,
    /// The workload's name (`mixed`, `hpb`, [`IMAGE_SERVICE`], [`GATEWAY`], ...).
    pub workload: &'a str,
    /// Optimus Prime's own settings are given: pipelines, time-sharing degree or mesh.
    pub op_params: bool,
    /// RPCAcc's own settings are given: the PCIe round trip or the clock.
    pub rpcacc_params: bool,
    /// Fields are labelled for the card's memory (`--acc-field`).
    pub acc_fields: bool,
    /// The image service's own settings are given: host cores or a request rate.
    pub service_params: bool,
    /// The configuration is to be printed, not run.
    pub print_config: bool,
}

/// The run the settings ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// Optimus Prime on a workload or trace.
    Op,
    /// RPCAcc on a workload or trace, both directions or one.
    RpcAcc,
    /// RPCAcc's image-compression service on its three designs.
    ImageService,
    /// RPCAcc's cloud gateway under every placement of its packet's fields.
    Gateway,
}

impl RunSettings<'_> {
    /// Checks that every setting given applies to the run, reads the `--vary` axes
    /// ([`sweep::parse_axis`]) and checks them too; gives the kind of run and the axes.
    ///
    /// # Errors
    /// [`SimError::Param`] naming the first setting, in the order above, that does not apply
    /// (a model's settings given to the other, a service's settings to another workload,
    /// labels to a workload that places its own fields, an axis that does not parse or
    /// applies to another run, `--print-config` with axes).
    pub fn check(&self, vary: &[String]) -> Result<(RunKind, Vec<Axis>), SimError> {
        let bad = |why: &str| Err(SimError::Param(why.to_string()));
        match self.model {
            Model::Op if self.rpcacc_params || self.acc_fields => {
                return bad("--pcie-ns, --clock-mhz and --acc-field apply to --accel rpcacc")
            }
            Model::RpcAcc if self.op_params => {
                return bad("--pipelines, --interleave and --mesh apply to --accel op")
            }
            _ => {}
        }
        let named = |w: &str| self.workload == w;
        if self.model == Model::Op && (named(IMAGE_SERVICE) || named(GATEWAY)) {
            return Err(SimError::Param(format!(
                "workload {} is RPCAcc's; run it with --accel rpcacc",
                self.workload
            )));
        }
        let kind = match self.model {
            Model::Op => RunKind::Op,
            Model::RpcAcc if named(IMAGE_SERVICE) => RunKind::ImageService,
            Model::RpcAcc if named(GATEWAY) => RunKind::Gateway,
            Model::RpcAcc => RunKind::RpcAcc,
        };
        let image_service = kind == RunKind::ImageService;
        if self.service_params && !image_service {
            return Err(SimError::Param(format!(
                "--cores and --rate apply to --accel rpcacc --workload {IMAGE_SERVICE}"
            )));
        }
        if image_service && self.acc_fields {
            return bad("the image service labels its own fields; --acc-field does not apply");
        }
        if kind == RunKind::Gateway && self.acc_fields {
            return bad(
                "the gateway runs every placement of its fields; --acc-field does not apply",
            );
        }
        let axes = vary
            .iter()
            .map(|a| sweep::parse_axis(a))
            .collect::<Result<Vec<_>, _>>()?;
        if self.model == Model::Op && axes.iter().any(|a| a.path == sweep::PCIE_NS) {
            return Err(SimError::Param(format!(
                "--vary {} applies to --accel rpcacc",
                sweep::PCIE_NS
            )));
        }
        if !image_service
            && axes
                .iter()
                .any(|a| a.path == sweep::RATE || a.path == sweep::CORES)
        {
            return Err(SimError::Param(format!(
                "--vary rate and cores apply to --accel rpcacc --workload {IMAGE_SERVICE}"
            )));
        }
        if !axes.is_empty() && self.print_config {
            return bad("--print-config prints one configuration; leave out --vary");
        }
        Ok((kind, axes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op() -> RunSettings<'static> {
        RunSettings {
            model: Model::Op,
            workload: "mixed",
            op_params: false,
            rpcacc_params: false,
            acc_fields: false,
            service_params: false,
            print_config: false,
        }
    }

    fn rpcacc(workload: &'static str) -> RunSettings<'static> {
        RunSettings {
            model: Model::RpcAcc,
            workload,
            ..op()
        }
    }

    fn refused(s: RunSettings, vary: &[&str]) -> String {
        let vary: Vec<String> = vary.iter().map(|v| v.to_string()).collect();
        s.check(&vary).unwrap_err().to_string()
    }

    #[test]
    fn each_run_kind_takes_its_own_settings() {
        let kind = |s: RunSettings, vary: &[&str]| {
            let vary: Vec<String> = vary.iter().map(|v| v.to_string()).collect();
            s.check(&vary).unwrap()
        };
        assert_eq!(kind(op(), &[]).0, RunKind::Op);
        let (k, axes) = kind(
            RunSettings {
                op_params: true,
                ..op()
            },
            &["pipelines=1..3", "noc.mesh=4,8"],
        );
        assert_eq!((k, axes.len(), axes[0].values.len()), (RunKind::Op, 2, 3));
        assert_eq!(
            kind(
                RunSettings {
                    rpcacc_params: true,
                    acc_fields: true,
                    ..rpcacc("mixed")
                },
                &["pcie-ns=70,1250"]
            )
            .0,
            RunKind::RpcAcc
        );
        let service = RunSettings {
            service_params: true,
            ..rpcacc(IMAGE_SERVICE)
        };
        assert_eq!(
            kind(service, &["rate=1000", "cores=1,2"]).0,
            RunKind::ImageService
        );
        assert_eq!(kind(rpcacc(GATEWAY), &[]).0, RunKind::Gateway);
        let print = RunSettings {
            print_config: true,
            ..op()
        };
        assert_eq!(kind(print, &[]).0, RunKind::Op);
    }

    #[test]
    fn a_setting_for_another_run_is_refused_first_come_first_named() {
        let cases: [(RunSettings, &[&str], &str); 10] = [
            (
                RunSettings {
                    rpcacc_params: true,
                    ..op()
                },
                &["bad"],
                "--pcie-ns, --clock-mhz and --acc-field apply to --accel rpcacc",
            ),
            (
                RunSettings {
                    acc_fields: true,
                    ..op()
                },
                &[],
                "--pcie-ns, --clock-mhz and --acc-field apply to --accel rpcacc",
            ),
            (
                RunSettings {
                    op_params: true,
                    ..rpcacc("mixed")
                },
                &[],
                "--pipelines, --interleave and --mesh apply to --accel op",
            ),
            (
                RunSettings {
                    workload: GATEWAY,
                    ..op()
                },
                &[],
                "workload gateway is RPCAcc's; run it with --accel rpcacc",
            ),
            (
                RunSettings {
                    service_params: true,
                    ..rpcacc(GATEWAY)
                },
                &[],
                "--cores and --rate apply to --accel rpcacc --workload image-service",
            ),
            (
                RunSettings {
                    acc_fields: true,
                    ..rpcacc(IMAGE_SERVICE)
                },
                &[],
                "the image service labels its own fields; --acc-field does not apply",
            ),
            (
                RunSettings {
                    acc_fields: true,
                    ..rpcacc(GATEWAY)
                },
                &[],
                "the gateway runs every placement of its fields; --acc-field does not apply",
            ),
            (
                op(),
                &["pcie-ns=70"],
                "--vary pcie-ns applies to --accel rpcacc",
            ),
            (
                rpcacc("hpb"),
                &["cores=2"],
                "--vary rate and cores apply to --accel rpcacc --workload image-service",
            ),
            (
                RunSettings {
                    print_config: true,
                    ..op()
                },
                &["pipelines=1,2"],
                "--print-config prints one configuration; leave out --vary",
            ),
        ];
        for (s, vary, says) in cases {
            assert_eq!(refused(s, vary), says);
        }
        assert!(refused(op(), &["pipelines"]).starts_with("--vary pipelines: expected"));
    }
}
