//! A webhook transport as a native library, for the transport half of the
//! C ABI: it delivers nothing, and fails each event for good with what it
//! was given, so that the delivery log shows the delivery as it arrived.
use postern_plugin_api::webhook_transport::{Delivery, Outcome, WebhookTransport, log};

struct Relay;

impl WebhookTransport for Relay {
    fn deliver(d: Delivery) -> Outcome {
        log::write(log::Level::Info, &format!("relay got {}", d.event_id));
        let body: Option<&str> = std::str::from_utf8(&d.body).ok();
        Outcome::Failed(format!(
            "relay saw {} for {} with a {}-byte JSON body ({}), secret of {} bytes, {} settings",
            d.event_type,
            d.target,
            d.body.len(),
            if body.is_some_and(|b| b.contains(&d.event_id)) {
                "its event id inside"
            } else {
                "no event id inside"
            },
            d.secret.len(),
            d.settings.len()
        ))
    }
}

postern_plugin_api::export_webhook_transport!(Relay);
