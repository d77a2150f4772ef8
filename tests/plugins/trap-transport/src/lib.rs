//! A webhook transport whose every delivery attempt traps: the trap must
//! fail that one attempt, which the host retries like any other failure,
//! and leave the host and the other transports running.
use postern_plugin_api::webhook_transport::{Delivery, Outcome, WebhookTransport};

struct TrapTransport;

impl WebhookTransport for TrapTransport {
    fn deliver(_delivery: Delivery) -> Outcome {
        panic!("trap-transport always traps");
    }
}

postern_plugin_api::export_webhook_transport!(TrapTransport);
