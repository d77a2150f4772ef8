//! A file beside an SQLite database through which the processes on it tell
//! each other that something happened: one appends a byte, the others see
//! the length change (an `fstat`, not a query). PostgreSQL carries the same
//! news by `NOTIFY` (`cluster`).

use std::io::Write as _;
use std::path::Path;

pub struct Beacon(std::fs::File);

impl Beacon {
    /// `<database><suffix>`, created if it is not there.
    pub fn beside(database: &Path, suffix: &str) -> std::io::Result<Beacon> {
        let mut name = database.as_os_str().to_owned();
        name.push(suffix);
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(name)
            .map(Beacon)
    }

    /// Tells the other processes. `O_APPEND`: each byte lands past every
    /// other, whoever writes.
    pub fn ring(&self) -> std::io::Result<()> {
        (&self.0).write_all(b"!")
    }

    /// How often it was rung so far, by any process.
    pub fn rung(&self) -> std::io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
}

#[cfg(test)]
mod tests {
    use super::Beacon;

    #[test]
    fn a_ring_in_one_handle_is_counted_in_another() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("postern.db");
        let (a, b) = (
            Beacon::beside(&db, ".x").unwrap(),
            Beacon::beside(&db, ".x").unwrap(),
        );
        assert_eq!(b.rung().unwrap(), 0);
        a.ring().unwrap();
        a.ring().unwrap();
        assert_eq!(b.rung().unwrap(), 2);
        assert!(dir.path().join("postern.db.x").exists());
    }
}
