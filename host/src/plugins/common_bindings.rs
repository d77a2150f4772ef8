//! What every WIT version's bindings share: the identity-source conversions,
//! the identity-source calls and the capability interfaces, whose shapes have
//! not changed between versions. Each `since_vX` module expands
//! `common_bindings!()` with its own generated `types`, `source` (as `wit`),
//! `log`, `credentials` and `kv` in scope, so one version's types never leak
//! into another's.

macro_rules! common_bindings {
    // The arms are the sign-in errors a version adds to the five of 0.1.0.
    ($($arm:pat => $refusal:expr),* $(,)?) => {
        use crate::plugins::capabilities::{CallState, CredentialsError, KvError, LogLevel};
        use crate::plugins::contract::{
            Identity, KnownAccount, NewAccount, PasswordSignIn, Registration, RegistrationRefusal,
            SignInRefusal,
        };

        pub(crate) fn settings(list: &[(String, String)]) -> Vec<types::Setting> {
            list.iter()
                .map(|(key, value)| types::Setting {
                    key: key.clone(),
                    value: value.clone(),
                })
                .collect()
        }

        impl From<&KnownAccount> for types::Account {
            fn from(a: &KnownAccount) -> Self {
                types::Account {
                    id: a.id,
                    login: a.login.clone(),
                    email: a.email.clone(),
                    full_name: a.full_name.clone(),
                    password_hash: a.password_hash.clone(),
                    is_active: a.is_active,
                }
            }
        }

        impl From<&PasswordSignIn> for wit::PasswordSignIn {
            fn from(r: &PasswordSignIn) -> Self {
                wit::PasswordSignIn {
                    login: r.login.clone(),
                    password: r.password.clone(),
                    known_account: r.known_account.as_ref().map(Into::into),
                    settings: settings(&r.settings),
                }
            }
        }

        impl From<wit::SignInError> for SignInRefusal {
            fn from(e: wit::SignInError) -> Self {
                match e {
                    wit::SignInError::InvalidCredentials => SignInRefusal::InvalidCredentials,
                    wit::SignInError::NotSupported => SignInRefusal::NotSupported,
                    wit::SignInError::AccountDisabled(why) => SignInRefusal::AccountDisabled(why),
                    wit::SignInError::Misconfigured(why) => SignInRefusal::Misconfigured(why),
                    wit::SignInError::Unavailable(why) => SignInRefusal::Unavailable(why),
                    $($arm => $refusal,)*
                }
            }
        }

        impl From<&Registration> for wit::Registration {
            fn from(r: &Registration) -> Self {
                wit::Registration {
                    login: r.login.clone(),
                    email: r.email.clone(),
                    password: r.password.clone(),
                    settings: settings(&r.settings),
                }
            }
        }

        impl From<wit::RegistrationError> for RegistrationRefusal {
            fn from(e: wit::RegistrationError) -> Self {
                match e {
                    wit::RegistrationError::NotSupported => RegistrationRefusal::NotSupported,
                    wit::RegistrationError::InvalidLogin(why) => {
                        RegistrationRefusal::InvalidLogin(why)
                    }
                    wit::RegistrationError::InvalidEmail(why) => {
                        RegistrationRefusal::InvalidEmail(why)
                    }
                    wit::RegistrationError::WeakPassword(why) => {
                        RegistrationRefusal::WeakPassword(why)
                    }
                    wit::RegistrationError::Internal(why) => RegistrationRefusal::Internal(why),
                }
            }
        }

        impl From<wit::NewAccount> for NewAccount {
            fn from(a: wit::NewAccount) -> Self {
                NewAccount {
                    login: a.login,
                    email: a.email,
                    password_hash: a.password_hash,
                }
            }
        }

        /// `authenticate` on a fresh instance.
        pub(crate) fn authenticate(
            pre: &identity_source::IdentitySourcePre<CallState>,
            store: &mut wasmtime::Store<CallState>,
            request: &PasswordSignIn,
        ) -> wasmtime::Result<Result<Identity, SignInRefusal>> {
            let bindings = pre.instantiate(&mut *store)?;
            let out = bindings
                .postern_plugin_source()
                .call_authenticate(store, &request.into())?;
            Ok(out.map(Into::into).map_err(Into::into))
        }

        /// `register` on a fresh instance.
        pub(crate) fn register(
            pre: &identity_source::IdentitySourcePre<CallState>,
            store: &mut wasmtime::Store<CallState>,
            request: &Registration,
        ) -> wasmtime::Result<Result<NewAccount, RegistrationRefusal>> {
            let bindings = pre.instantiate(&mut *store)?;
            let out = bindings
                .postern_plugin_source()
                .call_register(store, &request.into())?;
            Ok(out.map(Into::into).map_err(Into::into))
        }

        impl types::Host for CallState {}

        impl From<log::Level> for LogLevel {
            fn from(level: log::Level) -> Self {
                match level {
                    log::Level::Trace => LogLevel::Trace,
                    log::Level::Debug => LogLevel::Debug,
                    log::Level::Info => LogLevel::Info,
                    log::Level::Warn => LogLevel::Warn,
                    log::Level::Error => LogLevel::Error,
                }
            }
        }

        impl log::Host for CallState {
            fn write(&mut self, level: log::Level, message: String) {
                self.log_write(level.into(), message)
            }
        }

        impl From<CredentialsError> for credentials::Error {
            fn from(e: CredentialsError) -> Self {
                match e {
                    CredentialsError::MalformedHash => credentials::Error::MalformedHash,
                    CredentialsError::TooLong => credentials::Error::TooLong,
                    CredentialsError::Internal(why) => credentials::Error::Internal(why),
                }
            }
        }

        impl credentials::Host for CallState {
            fn hash_password(&mut self, password: String) -> Result<String, credentials::Error> {
                Ok(self.credentials_hash(&password)?)
            }

            fn verify_password(
                &mut self,
                password: String,
                hash: String,
            ) -> Result<bool, credentials::Error> {
                Ok(self.credentials_verify(&password, &hash)?)
            }

            fn equalize_timing(&mut self, password: String) {
                self.credentials_equalize(&password)
            }
        }

        impl From<KvError> for kv::Error {
            fn from(e: KvError) -> Self {
                match e {
                    KvError::TooLarge => kv::Error::TooLarge,
                    KvError::Unavailable(why) => kv::Error::Unavailable(why),
                }
            }
        }

        impl kv::Host for CallState {
            fn get(&mut self, key: String) -> Result<Option<Vec<u8>>, kv::Error> {
                Ok(self.kv_get(&key)?)
            }

            fn set(&mut self, key: String, value: Vec<u8>) -> Result<(), kv::Error> {
                Ok(self.kv_set(&key, &value)?)
            }

            fn delete(&mut self, key: String) -> Result<(), kv::Error> {
                Ok(self.kv_delete(&key)?)
            }
        }

        /// Adds this version's `types` and the granted capabilities to a
        /// linker.
        pub(crate) fn add_to_linker(
            linker: &mut wasmtime::component::Linker<CallState>,
            grants: &[crate::plugins::Capability],
        ) -> wasmtime::Result<()> {
            use crate::plugins::Capability;
            use wasmtime::component::HasSelf;
            types::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)?;
            for grant in grants {
                match grant {
                    Capability::Log => {
                        log::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)?
                    }
                    Capability::Credentials => {
                        credentials::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)?
                    }
                    Capability::Kv => {
                        kv::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)?
                    }
                    // Versions that have them link them themselves
                    // (`directory`), or wasmtime-wasi does (`http`, `tcp`).
                    Capability::Directory
                    | Capability::Http
                    | Capability::Tcp
                    | Capability::Saml => {}
                }
            }
            Ok(())
        }

        // The `transport` interface is the same in every version.
        impl crate::plugins::worlds::TransportCalls
            for webhook_transport::WebhookTransportPre<CallState>
        {
            fn deliver(
                &self,
                store: &mut wasmtime::Store<CallState>,
                d: &crate::plugins::contract::Delivery,
            ) -> wasmtime::Result<crate::plugins::contract::TransportOutcome> {
                use crate::plugins::contract::TransportOutcome;
                use webhook_transport::exports::postern::plugin::transport as t;
                let bindings = self.instantiate(&mut *store)?;
                let delivery = t::Delivery {
                    event_id: d.event_id.clone(),
                    event_type: d.event_type.clone(),
                    timestamp: d.timestamp,
                    body: d.body.clone(),
                    target: d.target.clone(),
                    secret: d.secret.clone(),
                    settings: settings(&d.settings),
                };
                Ok(
                    match bindings
                        .postern_plugin_transport()
                        .call_deliver(store, &delivery)?
                    {
                        t::Outcome::Delivered => TransportOutcome::Delivered,
                        t::Outcome::Retry(why) => TransportOutcome::Retry(why),
                        t::Outcome::Failed(why) => TransportOutcome::Failed(why),
                    },
                )
            }
        }
    };
}

/// What 0.2.0 added and later versions keep unchanged: the `directory`
/// capability, the second factors' calls, and the sources' `list-users` and
/// `test-connection`. Expanded by each `since_vX` from 0.2.0 on, with its own
/// generated `directory`, `factor_wit`, `second_factor`, `identity_source`
/// and `wit` in scope.
macro_rules! since_v0_2_bindings {
    () => {
        type FactorPre = second_factor::SecondFactorPre<CallState>;
        type Store = wasmtime::Store<CallState>;

        impl From<crate::directory::Error> for directory::Error {
            fn from(e: crate::directory::Error) -> Self {
                use crate::directory::Error as E;
                match e {
                    E::Unavailable(why) => directory::Error::Unavailable(why),
                    E::BindFailed(why) => directory::Error::BindFailed(why),
                    E::Refused(why) => directory::Error::Refused(why),
                    E::SizeLimitExceeded => directory::Error::SizeLimitExceeded,
                    E::Misconfigured(why) => directory::Error::Misconfigured(why),
                }
            }
        }

        impl directory::Host for CallState {
            fn bind_check(
                &mut self,
                dn: String,
                password: String,
            ) -> Result<bool, directory::Error> {
                Ok(self.directory_bind_check(&dn, &password)?)
            }

            fn search(
                &mut self,
                base: String,
                scope: directory::Scope,
                filter: String,
                attributes: Vec<String>,
                size_limit: u32,
            ) -> Result<Vec<directory::Entry>, directory::Error> {
                let found = self.directory_search(
                    &base,
                    scope.into(),
                    &filter,
                    &attributes,
                    size_limit as usize,
                )?;
                Ok(found.into_iter().map(Into::into).collect())
            }
        }

        impl From<directory::Scope> for crate::directory::SearchScope {
            fn from(scope: directory::Scope) -> Self {
                match scope {
                    directory::Scope::Base => Self::Base,
                    directory::Scope::OneLevel => Self::OneLevel,
                    directory::Scope::Subtree => Self::Subtree,
                }
            }
        }

        impl From<crate::directory::Entry> for directory::Entry {
            fn from(e: crate::directory::Entry) -> Self {
                directory::Entry {
                    dn: e.dn,
                    attributes: e
                        .attributes
                        .into_iter()
                        .map(|(name, values)| directory::Attribute { name, values })
                        .collect(),
                }
            }
        }

        /// Links 0.2.0's own capabilities (those 0.1.0 lacks) when granted.
        pub(crate) fn add_directory_to_linker(
            linker: &mut wasmtime::component::Linker<CallState>,
            grants: &[crate::plugins::Capability],
        ) -> wasmtime::Result<()> {
            if grants.contains(&crate::plugins::Capability::Directory) {
                use wasmtime::component::HasSelf;
                directory::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)?;
            }
            Ok(())
        }

        impl From<factor_wit::FactorError> for FactorRefusal {
            fn from(e: factor_wit::FactorError) -> Self {
                match e {
                    factor_wit::FactorError::Rejected => FactorRefusal::Rejected,
                    factor_wit::FactorError::NotEnrolled => FactorRefusal::NotEnrolled,
                    factor_wit::FactorError::NotSupported => FactorRefusal::NotSupported,
                    factor_wit::FactorError::Misconfigured(why) => {
                        FactorRefusal::Misconfigured(why)
                    }
                    factor_wit::FactorError::Internal(why) => FactorRefusal::Internal(why),
                }
            }
        }

        impl From<factor_wit::Ceremony> for Ceremony {
            fn from(c: factor_wit::Ceremony) -> Self {
                Ceremony {
                    display: c.display,
                    pending_state: c.pending_state,
                }
            }
        }

        impl FactorCalls for FactorPre {
            fn begin_enrollment(
                &self,
                store: &mut Store,
                user: &KnownAccount,
                list: &[(String, String)],
            ) -> Call<Ceremony, FactorRefusal> {
                let bindings = self.instantiate(&mut *store)?;
                let out = bindings.postern_plugin_factor().call_begin_enrollment(
                    store,
                    &user.into(),
                    &settings(list),
                )?;
                Ok(out.map(Into::into).map_err(Into::into))
            }

            fn confirm_enrollment(
                &self,
                store: &mut Store,
                user: &KnownAccount,
                pending: &[u8],
                response: &str,
                list: &[(String, String)],
            ) -> Call<String, FactorRefusal> {
                let bindings = self.instantiate(&mut *store)?;
                let out = bindings.postern_plugin_factor().call_confirm_enrollment(
                    store,
                    &user.into(),
                    pending,
                    response,
                    &settings(list),
                )?;
                Ok(out.map_err(Into::into))
            }

            fn begin_verification(
                &self,
                store: &mut Store,
                user: Option<&KnownAccount>,
                list: &[(String, String)],
            ) -> Call<Ceremony, FactorRefusal> {
                let bindings = self.instantiate(&mut *store)?;
                let out = bindings.postern_plugin_factor().call_begin_verification(
                    store,
                    user.map(Into::into).as_ref(),
                    &settings(list),
                )?;
                Ok(out.map(Into::into).map_err(Into::into))
            }

            fn verify(
                &self,
                store: &mut Store,
                user: Option<&KnownAccount>,
                pending: &[u8],
                response: &str,
                list: &[(String, String)],
            ) -> Call<i64, FactorRefusal> {
                let bindings = self.instantiate(&mut *store)?;
                let out = bindings.postern_plugin_factor().call_verify(
                    store,
                    user.map(Into::into).as_ref(),
                    pending,
                    response,
                    &settings(list),
                )?;
                Ok(out.map_err(Into::into))
            }

            fn remove(
                &self,
                store: &mut Store,
                user: &KnownAccount,
                handle: &str,
                list: &[(String, String)],
            ) -> Call<(), FactorRefusal> {
                let bindings = self.instantiate(&mut *store)?;
                let out = bindings.postern_plugin_factor().call_remove(
                    store,
                    &user.into(),
                    handle,
                    &settings(list),
                )?;
                Ok(out.map_err(Into::into))
            }
        }

        /// `list-users` on a fresh instance.
        pub(crate) fn list_users(
            pre: &identity_source::IdentitySourcePre<CallState>,
            store: &mut wasmtime::Store<CallState>,
            list: &[(String, String)],
        ) -> Call<Vec<crate::plugins::contract::ListedUser>, SignInRefusal> {
            let bindings = pre.instantiate(&mut *store)?;
            let out = bindings
                .postern_plugin_source()
                .call_list_users(store, &settings(list))?;
            Ok(out
                .map(|users| {
                    users
                        .into_iter()
                        .map(|u| crate::plugins::contract::ListedUser {
                            identity: u.identity.into(),
                            disabled: u.disabled,
                        })
                        .collect()
                })
                .map_err(Into::into))
        }

        /// `test-connection` on a fresh instance.
        pub(crate) fn test_connection(
            pre: &identity_source::IdentitySourcePre<CallState>,
            store: &mut wasmtime::Store<CallState>,
            list: &[(String, String)],
        ) -> Call<String, SignInRefusal> {
            let bindings = pre.instantiate(&mut *store)?;
            let out = bindings
                .postern_plugin_source()
                .call_test_connection(store, &settings(list))?;
            Ok(out.map_err(Into::into))
        }
    };
}
