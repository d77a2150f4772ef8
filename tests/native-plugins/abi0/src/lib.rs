//! A library that says it speaks native ABI version 0, which no host
//! serves; it has the entry of an identity source all the same.

#[unsafe(no_mangle)]
pub extern "C" fn postern_abi_version() -> u32 {
    0
}

#[unsafe(no_mangle)]
pub extern "C" fn postern_identity_source() -> i32 {
    1
}
