//! The local server's outlet: the Prometheus recorder of `metrics-exporter-prometheus`, every
//! definition described with its buckets, and what is exported from the start registered.

use ::metrics::{Key, Recorder};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusRecorder};

use super::{IMPLAUSIBLE_LAP_REASONS, Kind, METADATA, Outlet, definitions as d};

/// The recorder `GET /metrics` of the local server renders.
pub(super) struct LocalOutlet(PrometheusRecorder);

impl LocalOutlet {
    pub(super) fn new() -> Self {
        let mut builder = PrometheusBuilder::new();
        for definition in d::ALL {
            if let Some(buckets) = definition.buckets {
                builder = builder
                    .set_buckets_for_metric(Matcher::Full(definition.name.to_owned()), buckets)
                    .expect("buckets are not empty");
            }
        }
        let prometheus = builder.build_recorder();
        for definition in d::ALL {
            definition.describe_to(&prometheus);
        }
        // What is exported from the start, at 0, as the Prometheus text always had it: the
        // metrics without labels, and the implausible-lap reasons (a fixed set, so a rate
        // over the series works before the first refusal).
        for definition in d::ALL.iter().filter(|d| d.labels.is_empty()) {
            let key = Key::from_static_name(definition.name);
            match definition.kind {
                Kind::Counter => drop(prometheus.register_counter(&key, &METADATA)),
                Kind::Gauge => drop(prometheus.register_gauge(&key, &METADATA)),
                Kind::Histogram => drop(prometheus.register_histogram(&key, &METADATA)),
            }
        }
        for reason in IMPLAUSIBLE_LAP_REASONS {
            let key = Outlet::key(&d::IMPLAUSIBLE_LAPS, &[reason]);
            drop(prometheus.register_counter(&key, &METADATA));
        }
        Self(prometheus)
    }

    pub(super) fn recorder(&self) -> &dyn Recorder {
        &self.0
    }

    /// Folds the histograms' recorded values into their buckets.
    pub(super) fn upkeep(&self) {
        self.0.handle().run_upkeep();
    }

    /// The exposition text.
    pub(super) fn render(&self) -> String {
        self.0.handle().render()
    }
}
