//! The host's async entry points into plugins: each runs one call of a
//! world (`worlds`) on a blocking thread in a fresh store and counts it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use wasmtime::Store;

use super::capabilities::CallState;
use super::capabilities::Route;
use super::contract::{
    Ceremony, Delivery, FactorRefusal, Identity, KnownAccount, ListedUser, NewAccount,
    PasswordSignIn, Redirect, Registration, RegistrationRefusal, SignInRefusal, TransportOutcome,
};
use super::plugin::{Plugin, State};
use super::registry::Plugins;
use super::worlds::{Prepared, Settings};
use super::{Error, Origin, Result, World, engine};

impl Plugins {
    /// Makes one webhook delivery attempt through a transport, to the
    /// destination `route` lends for this call only. A trap, or a call that
    /// outlives `deadline` (a transport blocked on a socket), is an error:
    /// the attempt failed and the queue tries again.
    pub(crate) async fn deliver(
        &self,
        plugin: &Arc<Plugin>,
        delivery: Delivery,
        route: Route,
        deadline: std::time::Duration,
    ) -> Result<TransportOutcome> {
        let call = self.call_routed(
            plugin,
            World::WebhookTransport,
            Some(route),
            move |p, store| p.transport()?.deliver(store, &delivery),
        );
        match tokio::time::timeout(deadline, call).await {
            Ok(outcome) => outcome,
            Err(_) => {
                let reason = format!("no answer within {} s", deadline.as_secs());
                plugin.stats.failed(&reason);
                Err(Error::Trap {
                    plugin: plugin.id.to_string(),
                    reason,
                })
            }
        }
    }

    /// Calls `authenticate` of an identity source.
    pub async fn authenticate(
        &self,
        plugin: &Arc<Plugin>,
        request: &PasswordSignIn,
    ) -> Result<std::result::Result<Identity, SignInRefusal>> {
        let request = request.clone();
        self.call(plugin, World::IdentitySource, move |p, store| {
            p.source()?.authenticate(store, &request)
        })
        .await
    }

    /// Calls `register` of an identity source.
    pub async fn register(
        &self,
        plugin: &Arc<Plugin>,
        request: &Registration,
    ) -> Result<std::result::Result<NewAccount, RegistrationRefusal>> {
        let request = request.clone();
        self.call(plugin, World::IdentitySource, move |p, store| {
            p.source()?.register(store, &request)
        })
        .await
    }

    /// Every user of an identity source, for a full sync.
    pub async fn list_users(
        &self,
        plugin: &Arc<Plugin>,
    ) -> Result<std::result::Result<Vec<ListedUser>, SignInRefusal>> {
        let settings = plugin.settings.clone();
        self.call(plugin, World::IdentitySource, move |p, store| {
            p.source()?.list_users(store, &settings)
        })
        .await
    }

    /// An identity source's own check of its connection and settings.
    pub async fn test_connection(
        &self,
        plugin: &Arc<Plugin>,
    ) -> Result<std::result::Result<String, SignInRefusal>> {
        let settings = plugin.settings.clone();
        self.call(plugin, World::IdentitySource, move |p, store| {
            p.source()?.test_connection(store, &settings)
        })
        .await
    }

    /// Starts a sign-in by redirect: where to send the browser, and the
    /// state to keep until it comes back to `callback_url`.
    pub async fn begin_redirect(
        &self,
        plugin: &Arc<Plugin>,
        callback_url: &str,
    ) -> Result<std::result::Result<Redirect, SignInRefusal>> {
        let (settings, callback_url) = (plugin.settings.clone(), callback_url.to_string());
        self.call(plugin, World::IdentitySource, move |p, store| {
            p.source()?.begin_redirect(store, &settings, &callback_url)
        })
        .await
    }

    /// Completes a sign-in by redirect with the callback's parameters and
    /// the state [`Plugins::begin_redirect`] returned.
    pub async fn complete_redirect(
        &self,
        plugin: &Arc<Plugin>,
        callback_url: &str,
        pending: Vec<u8>,
        parameters: Vec<(String, String)>,
    ) -> Result<std::result::Result<Identity, SignInRefusal>> {
        let (settings, callback_url) = (plugin.settings.clone(), callback_url.to_string());
        self.call(plugin, World::IdentitySource, move |p, store| {
            p.source()?
                .complete_redirect(store, &settings, &callback_url, &pending, &parameters)
        })
        .await
    }

    /// Starts enrolling `user` with a second factor: what to show them, and
    /// the state to keep until they confirm.
    pub async fn begin_enrollment(
        &self,
        plugin: &Arc<Plugin>,
        user: &KnownAccount,
        settings: &Settings,
    ) -> Result<std::result::Result<Ceremony, FactorRefusal>> {
        let (user, settings) = (user.clone(), settings.to_vec());
        self.call(plugin, World::SecondFactor, move |p, store| {
            p.factor()?.begin_enrollment(store, &user, &settings)
        })
        .await
    }

    /// Confirms an enrolment with the user's first response; returns the new
    /// credential's handle.
    pub async fn confirm_enrollment(
        &self,
        plugin: &Arc<Plugin>,
        user: &KnownAccount,
        pending: Vec<u8>,
        response: &str,
        settings: &Settings,
    ) -> Result<std::result::Result<String, FactorRefusal>> {
        let (user, response, settings) = (user.clone(), response.to_string(), settings.to_vec());
        self.call(plugin, World::SecondFactor, move |p, store| {
            p.factor()?
                .confirm_enrollment(store, &user, &pending, &response, &settings)
        })
        .await
    }

    /// Starts a verification: the challenge to show, and the state to keep.
    /// `user` is `None` for a passkey sign-in.
    pub async fn begin_verification(
        &self,
        plugin: &Arc<Plugin>,
        user: Option<&KnownAccount>,
        settings: &Settings,
    ) -> Result<std::result::Result<Ceremony, FactorRefusal>> {
        let (user, settings) = (user.cloned(), settings.to_vec());
        self.call(plugin, World::SecondFactor, move |p, store| {
            p.factor()?
                .begin_verification(store, user.as_ref(), &settings)
        })
        .await
    }

    /// Checks a second-factor response; returns the id of the user it
    /// proves.
    pub async fn verify_factor(
        &self,
        plugin: &Arc<Plugin>,
        user: Option<&KnownAccount>,
        pending: Vec<u8>,
        response: &str,
        settings: &Settings,
    ) -> Result<std::result::Result<i64, FactorRefusal>> {
        let (user, response, settings) = (user.cloned(), response.to_string(), settings.to_vec());
        self.call(plugin, World::SecondFactor, move |p, store| {
            p.factor()?
                .verify(store, user.as_ref(), &pending, &response, &settings)
        })
        .await
    }

    /// Removes one credential of a user from a factor.
    pub async fn remove_factor(
        &self,
        plugin: &Arc<Plugin>,
        user: &KnownAccount,
        handle: &str,
        settings: &Settings,
    ) -> Result<std::result::Result<(), FactorRefusal>> {
        let (user, handle, settings) = (user.clone(), handle.to_string(), settings.to_vec());
        self.call(plugin, World::SecondFactor, move |p, store| {
            p.factor()?.remove(store, &user, &handle, &settings)
        })
        .await
    }

    /// Runs `f` on a blocking thread (plugin code and argon2 are CPU-bound)
    /// with a fresh store for the plugin, which must be ready and of `kind`.
    /// A failure is counted, logged and recorded before it is returned.
    async fn call<R, F>(&self, plugin: &Arc<Plugin>, kind: World, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&Prepared, &mut Store<CallState>) -> wasmtime::Result<R> + Send + 'static,
    {
        self.call_routed(plugin, kind, None, f).await
    }

    async fn call_routed<R, F>(
        &self,
        plugin: &Arc<Plugin>,
        kind: World,
        route: Option<Route>,
        f: F,
    ) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&Prepared, &mut Store<CallState>) -> wasmtime::Result<R> + Send + 'static,
    {
        let unavailable = |reason: String| Error::Unavailable {
            plugin: plugin.id.to_string(),
            reason,
        };
        if plugin.is_paused() {
            return Err(unavailable("disabled by an administrator".into()));
        }
        let prepared = match &plugin.state {
            State::Ready { prepared, .. } if plugin.kind == kind => prepared.clone(),
            State::Ready { .. } => return Err(unavailable(format!("not a {}", kind.as_str()))),
            State::Refused(why) => return Err(unavailable(why.clone())),
            State::Disabled => return Err(unavailable("disabled".into())),
        };
        // A native call holds one of its library's slots until its thread
        // returns, even after the caller stopped waiting.
        let slot = match &plugin.native_slots {
            Some(slots) => Some(slots.clone().try_acquire_owned().map_err(|_| {
                unavailable(format!(
                    "all {} of its call slots are taken by calls still running",
                    super::native::MAX_CALLS
                ))
            })?),
            None => None,
        };
        let (p, lender, engine) = (plugin.clone(), self.lender.clone(), self.engine.clone());
        // A call may block (on a capability's database or network use), so
        // it never runs on an async worker as such. A delivery is handed to
        // a blocking thread, where the caller's time-out can leave it
        // behind. Any other call runs where it is, after this worker hands
        // its other tasks to another thread (`block_in_place`): the caller
        // does not wait for a blocking thread to wake up, which was more
        // than half of a short call.
        //
        // A native plugin's call always goes to a blocking thread: no epoch
        // deadline reaches native code, so the host stops waiting at the
        // plugin's time-out and leaves the thread to finish on its own.
        let native = matches!(plugin.origin, Origin::Native(_));
        let inline = !native
            && route.is_none()
            && tokio::runtime::Handle::current().runtime_flavor()
                == tokio::runtime::RuntimeFlavor::MultiThread;
        let run = move || {
            let _slot = slot;
            let _ticking = engine::ticking();
            let mut store = engine::new_store(p.id.clone(), &p.limits, lender, &engine, route);
            f(&prepared, &mut store).map_err(|e| engine::describe_failure(&p.limits, &e))
        };
        let outcome = if inline {
            tokio::task::block_in_place(run)
        } else {
            let task = tokio::task::spawn_blocking(run);
            let joined = if native {
                let limit = plugin.limits.timeout;
                match tokio::time::timeout(limit, task).await {
                    Ok(joined) => joined,
                    Err(_) => Ok(Err(format!(
                        "the native call gave no answer within {} ms; it was left running on its thread",
                        limit.as_millis()
                    ))),
                }
            } else {
                task.await
            };
            joined.map_err(|e| Error::Runtime(format!("plugin call did not finish: {e}")))?
        };
        plugin.stats.calls.fetch_add(1, Ordering::Relaxed);
        plugin.stats.pending_calls.fetch_add(1, Ordering::Relaxed);
        match outcome {
            Ok(v) => {
                // A refused request is written at once, like a failure: an
                // operator looking into a failed sign-in sees it.
                if plugin.http.as_ref().is_some_and(|g| g.has_pending()) {
                    self.flush_stats().await;
                }
                Ok(v)
            }
            Err(reason) => {
                tracing::error!(plugin = %plugin.id, "plugin call failed: {reason}");
                plugin.stats.failed(&reason);
                // Written before the request answers, so that an operator who
                // looks right after a failure sees it.
                self.flush_stats().await;
                Err(Error::Trap {
                    plugin: plugin.id.to_string(),
                    reason,
                })
            }
        }
    }
}
