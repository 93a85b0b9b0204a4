//! The per-recipient return path (VERP): `b-<delivery>-<n>-<mac>@<bounce
//! domain>`. Bounces come back to it, so it names the delivery and the
//! recipient; the MAC (a keyed hash under the service's secret) means a
//! guessed or forged address changes nothing. All lower case hex, because
//! some servers fold the local part's case.

use crate::context::Context;

/// Hex digits of the MAC kept: 80 bits.
const MAC_DIGITS: usize = 20;

/// The bounce domain: mail to it is reports about our own mail.
pub fn bounce_domain(ctx: &Context) -> String {
    format!("bounce.{}", ctx.config.service_domain)
}

/// A fresh delivery id: 16 hex digits.
pub fn new_delivery_id() -> String {
    hex::encode(rand::random::<[u8; 8]>())
}

fn mac(ctx: &Context, delivery: &str, n: usize) -> String {
    let mut digest = ctx.hasher.digest("return-path", &format!("{delivery}-{n}"));
    digest.truncate(MAC_DIGITS);
    digest
}

/// The envelope sender for recipient `n` of a delivery.
pub fn for_recipient(ctx: &Context, delivery: &str, n: usize) -> String {
    format!("b-{delivery}-{n}-{}@{}", mac(ctx, delivery, n), bounce_domain(ctx))
}

/// The delivery and recipient a return path names, when it is one of ours
/// and its MAC holds.
pub fn verify(ctx: &Context, address: &str) -> Option<(String, usize)> {
    let address = address
        .trim()
        .trim_start_matches('<')
        .trim_end_matches('>')
        .to_ascii_lowercase();
    let (local, domain) = address.rsplit_once('@')?;
    if domain != bounce_domain(ctx) {
        return None;
    }
    let mut parts = local.strip_prefix("b-")?.split('-');
    let (delivery, n, given) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || delivery.len() != 16 || !delivery.bytes().all(|b| b.is_ascii_hexdigit()) || n.len() > 2
    {
        return None;
    }
    let n: usize = n.parse().ok()?;
    let expected = mac(ctx, delivery, n);
    // Constant time: the MAC is the only secret here.
    let same: bool = subtle::ConstantTimeEq::ct_eq(expected.as_bytes(), given.as_bytes()).into();
    same.then(|| (delivery.to_string(), n))
}
