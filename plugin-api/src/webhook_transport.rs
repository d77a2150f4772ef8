//! The `webhook-transport` world: a way to carry webhook events to
//! receivers. It exports `transport` and may import the capabilities
//! `log` and `kv`.

/// The world's bindings as `wit_bindgen` generates them. Plugins reach
/// them through the re-exports of this module and
/// [`export_webhook_transport!`](crate::export_webhook_transport).
#[doc(hidden)]
// Generated code: the WIT leaves some record fields undocumented
// (`setting.key`), and so are their Rust fields.
#[allow(missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit/v0.3.0",
        world: "webhook-transport",
        // The native C ABI carries these types as JSON.
        additional_derives: [serde::Serialize, serde::Deserialize],
        default_bindings_module: "postern_plugin_api::webhook_transport::bindings",
        pub_export_macro: true,
        export_macro_name: "export",
    });
}

use core::marker::PhantomData;

pub use bindings::exports::postern::plugin::transport::{Delivery, Outcome};
pub use bindings::postern::plugin::types::Setting;
/// The capabilities a webhook transport may import: `log` and `kv` (a
/// key-value store private to the plugin). Each is linked only when the
/// operator grants it; a component that imports one it was not granted
/// is refused at load.
#[cfg(target_arch = "wasm32")]
pub use bindings::postern::plugin::{kv, log};
/// The same capabilities in a native build, through the host's function
/// table (or the test harness).
#[cfg(not(target_arch = "wasm32"))]
pub use native_capabilities::{kv, log};

#[cfg(not(target_arch = "wasm32"))]
mod native_capabilities {
    crate::native::native_log!();
    crate::native::native_kv!();
}

/// The requests of the native entry `postern_webhook_transport`.
#[cfg(not(target_arch = "wasm32"))]
#[doc(hidden)]
pub mod native_entry {
    use super::*;

    /// One call, as the host encodes it.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Request {
        Deliver(Delivery),
    }

    /// Runs one call of `T` and encodes its answer.
    pub fn dispatch<T: WebhookTransport>(request: Request) -> serde_json::Result<Vec<u8>> {
        match request {
            Request::Deliver(d) => serde_json::to_vec(&T::deliver(d)),
        }
    }
}

setting_helpers!(Setting);

/// A webhook transport: what the `transport` interface exports.
pub trait WebhookTransport {
    /// Makes one delivery attempt of one event to one receiver, and says
    /// what became of it. The default fails for good, so that an
    /// unfinished transport never loses events silently: they go to the
    /// dead letters.
    fn deliver(delivery: Delivery) -> Outcome {
        let _ = delivery;
        Outcome::Failed("this transport does not deliver".into())
    }
}

/// Carries a [`WebhookTransport`] to the generated export trait; named
/// only by [`export_webhook_transport!`](crate::export_webhook_transport).
#[doc(hidden)]
pub struct Adapter<T>(PhantomData<T>);

impl<T: WebhookTransport> bindings::exports::postern::plugin::transport::Guest for Adapter<T> {
    fn deliver(delivery: Delivery) -> Outcome {
        T::deliver(delivery)
    }
}

/// Exports a type implementing [`WebhookTransport`] as the component's
/// `transport` interface: the plugin is then a webhook transport.
#[cfg(feature = "webhook-transport")]
#[macro_export]
macro_rules! export_webhook_transport {
    ($transport:ty) => {
        #[cfg(target_arch = "wasm32")]
        type __PosternWebhookTransport = $crate::webhook_transport::Adapter<$transport>;
        #[cfg(target_arch = "wasm32")]
        $crate::webhook_transport::bindings::export!(__PosternWebhookTransport with_types_in $crate::webhook_transport::bindings);
        #[cfg(not(target_arch = "wasm32"))]
        $crate::__native_exports!(
            postern_webhook_transport,
            $crate::webhook_transport::native_entry::Request,
            $crate::webhook_transport::native_entry::dispatch::<$transport>
        );
    };
}
