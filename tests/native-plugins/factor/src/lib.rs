//! A second factor as a native library, for the second-factor half of the
//! C ABI: the enrolment code is the pending state itself, an enrolment is
//! kept in `kv`, and verification takes the response `ok`.
use postern_plugin_api::second_factor::{
    Account, Ceremony, FactorError, SecondFactor, Setting, kv,
};

struct Factor;

fn slot(user: &Account) -> String {
    format!("enrolled/{}", user.id)
}

fn kv_error(e: kv::Error) -> FactorError {
    FactorError::Internal(format!("{e:?}"))
}

impl SecondFactor for Factor {
    fn begin_enrollment(user: Account, _settings: Vec<Setting>) -> Result<Ceremony, FactorError> {
        Ok(Ceremony {
            display: format!("enrol {}", user.login),
            pending_state: b"code-1234".to_vec(),
        })
    }

    fn confirm_enrollment(
        user: Account,
        pending_state: Vec<u8>,
        response: String,
        _settings: Vec<Setting>,
    ) -> Result<String, FactorError> {
        if response.as_bytes() != pending_state {
            return Err(FactorError::Rejected);
        }
        kv::set(&slot(&user), b"yes").map_err(kv_error)?;
        Ok(format!("key-{}", user.id))
    }

    fn verify(
        user: Option<Account>,
        _pending_state: Vec<u8>,
        response: String,
        _settings: Vec<Setting>,
    ) -> Result<i64, FactorError> {
        let user = user.ok_or(FactorError::NotSupported)?;
        if kv::get(&slot(&user)).map_err(kv_error)?.is_none() {
            return Err(FactorError::NotEnrolled);
        }
        if response != "ok" {
            return Err(FactorError::Rejected);
        }
        Ok(user.id)
    }

    fn remove(user: Account, _handle: String, _settings: Vec<Setting>) -> Result<(), FactorError> {
        kv::delete(&slot(&user)).map_err(kv_error)
    }
}

postern_plugin_api::export_second_factor!(Factor);
