//! The report reader against real bounces and complaints from public bounce
//! parser test suites (tests/fixtures/dsn, ORIGIN.md says where each comes
//! from and what its suite expects), and the builders read back.

use chrono::DateTime;
use common::mail::dsn::{self, Abuse, Action, Bounce, Complaint, Dsn, RecipientStatus, Report, Unreadable};

/// What the reader must make of one fixture.
enum Want {
    Delivery {
        reporting_mta: Option<&'static str>,
        recipients: &'static [Rcpt],
    },
    Complaint(Arf),
    AutoReply,
    Unreadable(&'static str),
}

/// One recipient's expected facts. `diagnostic` is the start of the remote
/// reply as read (unfolded).
struct Rcpt {
    to: &'static str,
    action: Action,
    status: Option<&'static str>,
    permanent: bool,
    smtp_code: Option<u16>,
    diagnostic: Option<&'static str>,
    remote_mta: Option<&'static str>,
}

struct Arf {
    feedback_type: &'static str,
    original_recipient: Option<&'static str>,
    original_mail_from: Option<&'static str>,
    original_message_id: Option<&'static str>,
    reporter: &'static str,
}

const fn failed(to: &'static str, status: &'static str, code: u16, diagnostic: &'static str) -> Rcpt {
    Rcpt {
        to,
        action: Action::Failed,
        status: Some(status),
        permanent: true,
        smtp_code: Some(code),
        diagnostic: Some(diagnostic),
        remote_mta: None,
    }
}

const fn via(rcpt: Rcpt, remote_mta: &'static str) -> Rcpt {
    Rcpt {
        remote_mta: Some(remote_mta),
        ..rcpt
    }
}

const CORPUS: &[(&str, Want)] = &[
    // RFC 3464 reports, one per MTA or provider.
    (
        "postfix-5.1.1-user-unknown.eml",
        Want::Delivery {
            reporting_mta: Some("mv-osn-hcb007.ocn.ad.jp"),
            recipients: &[via(
                failed(
                    "kijitora@example.co.jp",
                    "5.1.1",
                    550,
                    "550 5.1.1 Address rejected kijitora@example.co.jp",
                ),
                "mx01.example.co.jp",
            )],
        },
    ),
    (
        "postfix-two-recipients.eml",
        Want::Delivery {
            reporting_mta: Some("smtp.example.com"),
            recipients: &[
                via(
                    failed(
                        "filtered@example.co.jp",
                        "5.2.1",
                        550,
                        "550 5.2.1 <filtered@example.co.jp>... User Unknown",
                    ),
                    "mx.example.co.jp",
                ),
                via(
                    failed(
                        "userunknown@example.co.jp",
                        "5.1.1",
                        550,
                        "550 5.1.1 <userunknown@example.co.jp>...",
                    ),
                    "mx.example.co.jp",
                ),
            ],
        },
    ),
    (
        "sendmail-5.1.1-user-unknown.eml",
        Want::Delivery {
            reporting_mta: Some("smtpgw.example.jp"),
            recipients: &[via(
                failed(
                    "userunknown@bouncehammer.jp",
                    "5.1.1",
                    550,
                    "550 5.1.1 <userunknown@bouncehammer.jp>...",
                ),
                "mx.bouncehammer.jp",
            )],
        },
    ),
    (
        // The DSN's Diagnostic-Code is empty ("SMTP; "); the 421 sisimai
        // reports is in the human-readable transcript only.
        "sendmail-delayed-4.5.0.eml",
        Want::Delivery {
            reporting_mta: Some("neko.example.jp"),
            recipients: &[Rcpt {
                to: "this-local-part-does-not-exist-on-the-system@y-mobile.ne.jp",
                action: Action::Delayed,
                status: Some("4.5.0"),
                permanent: false,
                smtp_code: None,
                diagnostic: None,
                remote_mta: None,
            }],
        },
    ),
    (
        "exim-dsn-5.0.0.eml",
        Want::Delivery {
            reporting_mta: Some("example.co.jp"),
            recipients: &[via(
                failed(
                    "kijitora@example.co.jp",
                    "5.0.0",
                    550,
                    "550 Bad SPF records for [example.org:192.0.2.2], see http://spf.pobox.com/",
                ),
                "192.0.2.22",
            )],
        },
    ),
    (
        "exchange2007-5.1.1.eml",
        Want::Delivery {
            reporting_mta: Some("mx4.example.org"),
            recipients: &[failed(
                "mikeneko@example.co.jp",
                "5.1.1",
                550,
                "550 5.1.1 RESOLVER.ADR.RecipNotFound; not found",
            )],
        },
    ),
    (
        "office365-5.1.1.eml",
        Want::Delivery {
            reporting_mta: Some("pu1apc01ht176.mail.protection.outlook.com"),
            recipients: &[via(
                failed(
                    "kijitora@cr3.neko.nyaan.jp",
                    "5.1.1",
                    550,
                    "550 5.1.1 <kijitora@cr3.neko.nyaan.jp>...",
                ),
                "nijo.cr3.neko.nyaan.jp",
            )],
        },
    ),
    (
        "outlook-hotmail-5.1.1.eml",
        Want::Delivery {
            reporting_mta: Some("blu004-omc3s6.outlook.example.com"),
            recipients: &[failed(
                "kijitora@example.jp",
                "5.1.1",
                550,
                "550 5.1.1 <kijitora@example.jp>... User Unknown",
            )],
        },
    ),
    (
        "gmail-dsn-5.1.1.eml",
        Want::Delivery {
            reporting_mta: Some("googlemail.com"),
            recipients: &[via(
                failed(
                    "libsisimai-2@googlegroups.com",
                    "5.1.1",
                    550,
                    "550-5.1.1 The email account that you tried to reach does not exist. Please try 550-5.1.1",
                ),
                "gmr-smtp-in.l.google.com",
            )],
        },
    ),
    (
        "gmail-delayed-4.4.1.eml",
        Want::Delivery {
            reporting_mta: Some("googlemail.com"),
            recipients: &[Rcpt {
                to: "sotoneko@nora.nyaan.jp",
                action: Action::Delayed,
                status: Some("4.4.1"),
                permanent: false,
                smtp_code: None,
                diagnostic: Some("The recipient server did not accept our requests to connect."),
                remote_mta: None,
            }],
        },
    ),
    (
        "amazonses-5.1.1.eml",
        Want::Delivery {
            reporting_mta: Some("a27-33.smtp-out.us-west-2.amazonses.com"),
            recipients: &[failed(
                "bounce@simulator.amazonses.com",
                "5.1.1",
                550,
                "550 5.1.1 user unknown",
            )],
        },
    ),
    // Bounces in prose, read by the fallback.
    (
        "exim-plain-text.eml",
        Want::Delivery {
            reporting_mta: None,
            recipients: &[failed(
                "kijitora@example.ed.jp",
                "5.7.0",
                550,
                "550 5.7.0 <shironeko@example.jp>... Please use the smtp server of your ISP.",
            )],
        },
    ),
    (
        "gmail-plain-text.eml",
        Want::Delivery {
            reporting_mta: None,
            recipients: &[failed(
                "userunknown@example.jp",
                "5.1.1",
                550,
                "550 5.1.1 <userunknown@example.jp>... User Unknown",
            )],
        },
    ),
    (
        "yahoo-plain-text.eml",
        Want::Delivery {
            reporting_mta: None,
            recipients: &[failed(
                "kijitora@example.org",
                "5.1.1",
                550,
                "550 5.1.1 <kijitora@example.org>... User Unknown [RCPT_TO]",
            )],
        },
    ),
    (
        "qmail-two-recipients.eml",
        Want::Delivery {
            reporting_mta: None,
            recipients: &[
                failed(
                    "userunknown@example.jp",
                    "5.1.1",
                    550,
                    "550 5.1.1 <userunknown@example.jp>... User Unknown",
                ),
                failed(
                    "filtered@example.jp",
                    "5.2.1",
                    550,
                    "550 5.2.1 <filtered@example.jp>... User Unknown",
                ),
            ],
        },
    ),
    // RFC 5965 complaints.
    (
        "arf-yahoo-abuse.eml",
        Want::Complaint(Arf {
            feedback_type: "abuse",
            original_recipient: Some("this-local-part-does-not-exist-on-yahoo@yahoo.com"),
            original_mail_from: Some("shironeko@example.com"),
            original_message_id: Some("000000000000000000000000.smtp@example.com"),
            reporter: "feedback@arf.mail.yahoo.com",
        }),
    ),
    (
        // No Original-Mail-From: the returned message's Return-Path stands in.
        "arf-smp-abuse.eml",
        Want::Complaint(Arf {
            feedback_type: "abuse",
            original_recipient: None,
            original_mail_from: Some("support@example.ed.jp"),
            original_message_id: None,
            reporter: "kijitora@example.co.jp",
        }),
    ),
    (
        "arf-opt-out.eml",
        Want::Complaint(Arf {
            feedback_type: "opt-out",
            original_recipient: None,
            original_mail_from: None,
            original_message_id: Some("0000000000000000000000000@example.net"),
            reporter: "kijitora@example.com",
        }),
    ),
    (
        "arf-dmarc-auth-failure.eml",
        Want::Complaint(Arf {
            feedback_type: "auth-failure",
            original_recipient: Some("kijitora@example.com"),
            original_mail_from: Some("sironeko@example.org"),
            original_message_id: Some("000000002.2222222.1500000000022@example.net"),
            reporter: "dmarc-noreply@example.com",
        }),
    ),
    // RFC 3834 automatic answers.
    ("autoreply-rfc3834.eml", Want::AutoReply),
    ("autoreply-exchange.eml", Want::AutoReply),
    ("autoreply-apple-vacation.eml", Want::AutoReply),
    // What the reader refuses.
    (
        "sendmail-broken-action-field.eml",
        Want::Unreadable("a recipient without a valid Action"),
    ),
    (
        "truncated-inside-recipient-block.eml",
        Want::Unreadable("a recipient without a valid Action"),
    ),
    (
        "truncated-before-delivery-status.eml",
        Want::Unreadable("no delivery-status part"),
    ),
    (
        "postmaster-notice-without-code.eml",
        Want::Unreadable("a bounce without an SMTP reply or status code"),
    ),
    (
        "hotmail-jmrp-not-arf.eml",
        Want::Unreadable("neither a report, a bounce nor an auto-reply"),
    ),
    (
        "not-a-bounce.eml",
        Want::Unreadable("neither a report, a bounce nor an auto-reply"),
    ),
];

fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/dsn")
}

fn check(file: &str, want: &Want) {
    let raw = std::fs::read(fixtures().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let got = dsn::read(&raw);
    match (want, got) {
        (
            Want::Delivery {
                reporting_mta,
                recipients,
            },
            Ok(Report::Delivery(dsn)),
        ) => {
            assert_eq!(dsn.reporting_mta.as_deref(), *reporting_mta, "{file}: reporting MTA");
            assert_eq!(dsn.recipients.len(), recipients.len(), "{file}: recipients");
            for (got, want) in dsn.recipients.iter().zip(recipients.iter()) {
                assert_eq!(got.final_recipient.as_deref(), Some(want.to), "{file}");
                assert_eq!(got.action, want.action, "{file}: {}", want.to);
                assert_eq!(got.status.as_deref(), want.status, "{file}: {}", want.to);
                assert_eq!(got.permanent(), want.permanent, "{file}: {}", want.to);
                assert_eq!(got.smtp_code, want.smtp_code, "{file}: {}", want.to);
                assert_eq!(got.remote_mta.as_deref(), want.remote_mta, "{file}: {}", want.to);
                match (got.diagnostic.as_deref(), want.diagnostic) {
                    (Some(got), Some(want)) => assert!(got.starts_with(want), "{file}: diagnostic {got:?}"),
                    (got, want) => assert_eq!(got, want, "{file}: diagnostic"),
                }
            }
        }
        (Want::Complaint(want), Ok(Report::Complaint(got))) => {
            let want = Complaint {
                feedback_type: want.feedback_type.into(),
                original_recipient: want.original_recipient.map(Into::into),
                original_mail_from: want.original_mail_from.map(Into::into),
                original_message_id: want.original_message_id.map(Into::into),
                reporter: Some(want.reporter.into()),
            };
            assert_eq!(got, want, "{file}");
        }
        (Want::AutoReply, Ok(Report::AutoReply)) => {}
        (Want::Unreadable(why), Err(got)) => assert_eq!(got, Unreadable(why), "{file}"),
        (_, got) => panic!("{file}: read as {got:?}"),
    }
}

#[test]
fn every_fixture_reads_as_its_suite_says() {
    for (file, want) in CORPUS {
        check(file, want);
    }
}

/// A fixture added without a row here would be checked by nothing.
#[test]
fn every_fixture_has_a_row() {
    let mut on_disk: Vec<String> = std::fs::read_dir(fixtures())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".eml"))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = CORPUS.iter().map(|(f, _)| f.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
    assert!(listed.len() >= 15);
}

const ORIGINAL: &str = "Return-Path: <bounces+AbC123@mail.example.com>\r\n\
    From: Ada <ada@example.com>\r\n\
    To: grace@example.org\r\n\
    Subject: Hello\r\n\
    Message-ID: <m1.2b3c@example.com>\r\n\
    Date: Tue, 14 Nov 2023 22:13:20 +0000\r\n\
    \r\n\
    The body, which a report never returns.\r\n";

fn bounce(action: Action, status: &'static str, smtp_code: u16, diagnostic: &'static str) -> Bounce<'static> {
    Bounce {
        reporting_mta: "mx1.example.com",
        to: "bounces+AbC123@mail.example.com",
        recipient: "Grace@Example.ORG",
        action,
        status,
        smtp_code,
        diagnostic,
        remote_mta: "mx.example.org",
        original: ORIGINAL,
        date: DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
    }
}

#[test]
fn a_built_dsn_reads_back_as_built() {
    let cases = [
        (
            bounce(
                Action::Failed,
                "5.1.1",
                550,
                "5.1.1 <grace@example.org>: Recipient address rejected",
            ),
            true,
        ),
        (
            bounce(Action::Delayed, "4.4.1", 451, "4.4.1 Connection timed out, will retry"),
            false,
        ),
        (
            bounce(Action::Delivered, "2.0.0", 250, "2.0.0 Ok: queued as 4Ab"),
            false,
        ),
    ];
    for (b, permanent) in cases {
        let raw = dsn::build_dsn(&b);
        assert_eq!(dsn::build_dsn(&b), raw, "the same report, byte for byte");
        let want = Dsn {
            reporting_mta: Some("mx1.example.com".into()),
            recipients: vec![RecipientStatus {
                final_recipient: Some("grace@example.org".into()),
                original_recipient: None,
                action: b.action,
                status: Some(b.status.into()),
                smtp_code: Some(b.smtp_code),
                diagnostic: Some(format!("{} {}", b.smtp_code, b.diagnostic)),
                remote_mta: Some("mx.example.org".into()),
            }],
        };
        assert_eq!(dsn::read(&raw), Ok(Report::Delivery(want.clone())), "{:?}", b.action);
        assert_eq!(want.recipients[0].permanent(), permanent);

        // Genuine structure: a multipart/report of the three RFC 3464 parts,
        // the last one the original's headers without its body.
        let message = mail_parser::MessageParser::default().parse(&raw).unwrap();
        let types: Vec<String> = message.parts[1..]
            .iter()
            .map(|p| {
                mail_parser::MimeHeaders::content_type(p)
                    .map(|ct| ct.ctype().to_string() + "/" + ct.subtype().unwrap_or(""))
            })
            .map(Option::unwrap_or_default)
            .collect();
        assert_eq!(types, ["text/plain", "message/delivery-status", "text/rfc822-headers"]);
        let root = mail_parser::MimeHeaders::content_type(&message).unwrap();
        assert_eq!(root.attribute("report-type"), Some("delivery-status"));
        let returned = std::str::from_utf8(message.parts[3].contents()).unwrap();
        assert!(returned.contains("Message-ID: <m1.2b3c@example.com>") && !returned.contains("The body"));
        assert_eq!(
            message.header_raw("Auto-Submitted").map(str::trim),
            Some("auto-replied")
        );
    }
}

#[test]
fn a_built_arf_reads_back_as_built() {
    let abuse = Abuse {
        reporter: "FBL@Feedback.Example.net",
        to: "abuse-desk@example.com",
        original_recipient: "grace@example.org",
        original_mail_from: "bounces+AbC123@mail.example.com",
        original: ORIGINAL,
        date: DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
    };
    let raw = dsn::build_arf(&abuse);
    assert_eq!(dsn::build_arf(&abuse), raw, "the same report, byte for byte");
    let want = Complaint {
        feedback_type: "abuse".into(),
        original_recipient: Some("grace@example.org".into()),
        original_mail_from: Some("bounces+abc123@mail.example.com".into()),
        original_message_id: Some("m1.2b3c@example.com".into()),
        reporter: Some("fbl@feedback.example.net".into()),
    };
    assert_eq!(dsn::read(&raw), Ok(Report::Complaint(want)));

    // RFC 5965 section 3.1: Feedback-Type, User-Agent and Version are required.
    let message = mail_parser::MessageParser::default().parse(&raw).unwrap();
    let report = std::str::from_utf8(message.parts[2].contents()).unwrap();
    for field in ["Feedback-Type: abuse\r\n", "User-Agent: ", "Version: 1\r\n"] {
        assert!(report.contains(field), "{field} in {report}");
    }
}
