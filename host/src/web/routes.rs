//! The route table of the pages: every path the site serves as HTML and the
//! handler that answers it, under the layer that lets a sign-in come back to
//! the page that asked for it.

use axum::Router;
use axum::routing::{get, post};

use super::home::home;
use super::second_step::{two_factor, two_factor_form};
use super::sign_up::{sign_up, sign_up_form};
use super::signin::{login, login_form, logout};
use super::{
    admin, admin_audit, admin_config, admin_users, applications, assets, create, error, external,
    hooks, issues, oauth, orgs, panel, pulls, repo_settings, repos, security, settings, webauthn,
};
use crate::state::App;

pub(crate) fn routes() -> Router<App> {
    Router::new()
        .route("/", get(home))
        .route("/user/login", get(login_form).post(login))
        .route("/user/logout", post(logout))
        .route("/user/sign_up", get(sign_up_form).post(sign_up))
        .route("/user/two_factor", get(two_factor_form).post(two_factor))
        .route("/user/oauth2/{name}", get(external::begin))
        .route(
            "/user/oauth2/{name}/callback",
            get(external::callback).post(external::callback_post),
        )
        .route("/user/oauth2/{name}/metadata", get(external::metadata))
        .route("/user/oauth2/{name}/link", post(external::link))
        .route(
            "/user/webauthn",
            get(webauthn::second_step_form).post(webauthn::second_step),
        )
        .route(
            "/user/passkey",
            get(webauthn::passkey_form).post(webauthn::passkey),
        )
        .route("/assets/postern.css", get(assets::stylesheet))
        .route("/assets/webauthn.js", get(assets::webauthn))
        .route("/assets/metadata-file.js", get(assets::metadata_file))
        .route("/assets/confirm.js", get(assets::confirm))
        .route(
            "/user/settings",
            get(settings::profile).post(settings::save_profile),
        )
        .route("/user/settings/password", post(settings::change_password))
        .route(
            "/user/settings/keys",
            get(settings::ssh_keys).post(settings::add_key),
        )
        .route(
            "/user/settings/keys/{id}/delete",
            post(settings::delete_key),
        )
        .route("/user/settings/sessions", get(settings::sessions_page))
        .route(
            "/user/settings/sessions/others/delete",
            post(settings::end_others),
        )
        .route(
            "/user/settings/sessions/{handle}/delete",
            post(settings::end_one),
        )
        .route(
            "/user/settings/applications/tokens",
            post(applications::create_token),
        )
        .route(
            "/user/settings/applications/tokens/{id}/delete",
            post(applications::delete_token),
        )
        .route(
            "/repo/create",
            get(create::repo_page).post(create::create_repo),
        )
        .route(
            "/org/create",
            get(create::org_page).post(create::create_org),
        )
        .route("/user/settings/security", get(security::show))
        .route("/org/{org}/settings", get(orgs::show).post(orgs::save))
        .route("/org/{org}/teams", get(orgs::teams).post(orgs::create_team))
        .route("/org/{org}/teams/{id}/members", post(orgs::add_member))
        .route(
            "/org/{org}/teams/{id}/members/{login}/delete",
            post(orgs::remove_member),
        )
        .route("/org/{org}/teams/{id}/repos", post(orgs::add_repo))
        .route(
            "/org/{org}/teams/{id}/repos/{repo}/delete",
            post(orgs::remove_repo),
        )
        .route("/user/settings/security/totp", post(security::begin))
        .route(
            "/user/settings/security/totp/confirm",
            post(security::confirm),
        )
        .route(
            "/user/settings/security/totp/delete",
            post(security::disable_totp),
        )
        .route(
            "/user/settings/security/backup_codes",
            post(security::regenerate_codes),
        )
        .route(
            "/user/settings/security/webauthn",
            post(security::begin_key),
        )
        .route(
            "/user/settings/security/webauthn/confirm",
            post(security::confirm_key),
        )
        .route(
            "/user/settings/security/webauthn/{id}/delete",
            post(security::remove_key),
        )
        .route(
            "/user/settings/security/linked/{name}/delete",
            post(security::unlink),
        )
        .route("/user/settings/applications", get(applications::show))
        .route(
            "/user/settings/applications/oauth2",
            post(applications::create),
        )
        .route(
            "/user/settings/applications/oauth2/{id}",
            post(applications::update),
        )
        .route(
            "/user/settings/applications/oauth2/{id}/regenerate_secret",
            post(applications::regenerate_secret),
        )
        .route(
            "/user/settings/applications/oauth2/{id}/delete",
            post(applications::delete),
        )
        .route(
            "/user/settings/applications/oauth2/authorized/{app_id}/revoke",
            post(applications::revoke),
        )
        .merge(oauth::routes())
        .route("/admin", get(panel::dashboard))
        .route("/admin/plugins", get(panel::plugins))
        .route("/admin/plugins/{id}/switch", post(panel::switch))
        .route("/admin/orgs", get(panel::orgs))
        .route("/admin/audit", get(admin_audit::audit_log))
        .route(
            "/admin/scim",
            get(admin_audit::scim_tokens).post(admin_audit::create_scim_token),
        )
        .route("/admin/scim/revoke", post(admin_audit::revoke_scim_token))
        .route("/admin/repos", get(panel::repos))
        .route("/admin/users", get(admin_users::list))
        .route(
            "/admin/users/new",
            get(admin_users::new_form).post(admin_users::create),
        )
        .route(
            "/admin/users/{id}",
            get(admin_users::show).post(admin_users::edit),
        )
        .route(
            "/admin/users/{id}/reset_2fa",
            post(admin_users::reset_second_factors),
        )
        .route(
            "/admin/users/{id}/bypass_codes",
            post(admin_users::bypass_codes),
        )
        .route("/admin/users/{id}/links", post(admin_users::link))
        .route("/admin/users/{id}/unlink", post(admin_users::unlink))
        .route(
            "/admin/config",
            get(admin_config::show).post(admin_config::set),
        )
        .route("/admin/auths", get(admin::list))
        .route("/admin/auths/new", get(admin::new_form).post(admin::create))
        .route("/admin/auths/{id}/test", post(admin::test))
        .route("/admin/auths/{id}/sync", post(admin::sync))
        .route(
            "/admin/auths/{id}/edit",
            get(admin::edit_form).post(admin::edit),
        )
        .route("/admin/auths/{id}/delete", post(admin::delete))
        .route("/admin/hooks", get(hooks::list).post(hooks::create))
        .route("/admin/hooks/dead", get(hooks::dead))
        .route(
            "/admin/hooks/dead/{delivery_id}/redeliver",
            post(hooks::redeliver_dead_letter),
        )
        .route("/admin/hooks/{id}", get(hooks::show).post(hooks::update))
        .route("/admin/hooks/{id}/delete", post(hooks::delete))
        .route("/admin/hooks/{id}/test", post(hooks::test))
        .route(
            "/admin/hooks/{id}/redeliver_dead",
            post(hooks::redeliver_dead),
        )
        .route(
            "/admin/hooks/{id}/deliveries/{delivery_id}",
            get(hooks::delivery),
        )
        .route(
            "/admin/hooks/{id}/deliveries/{delivery_id}/redeliver",
            post(hooks::redeliver),
        )
        .route(
            "/org/{org}/settings/hooks",
            get(hooks::list).post(hooks::create),
        )
        .route(
            "/org/{org}/settings/hooks/{id}",
            get(hooks::show).post(hooks::update),
        )
        .route("/org/{org}/settings/hooks/{id}/delete", post(hooks::delete))
        .route("/org/{org}/settings/hooks/{id}/test", post(hooks::test))
        .route(
            "/org/{org}/settings/hooks/{id}/redeliver_dead",
            post(hooks::redeliver_dead),
        )
        .route(
            "/org/{org}/settings/hooks/{id}/deliveries/{delivery_id}",
            get(hooks::delivery),
        )
        .route(
            "/org/{org}/settings/hooks/{id}/deliveries/{delivery_id}/redeliver",
            post(hooks::redeliver),
        )
        .route(
            "/{owner}/{repo}/settings/hooks",
            get(hooks::list).post(hooks::create),
        )
        .route(
            "/{owner}/{repo}/settings/hooks/{id}",
            get(hooks::show).post(hooks::update),
        )
        .route(
            "/{owner}/{repo}/settings/hooks/{id}/delete",
            post(hooks::delete),
        )
        .route(
            "/{owner}/{repo}/settings/hooks/{id}/test",
            post(hooks::test),
        )
        .route(
            "/{owner}/{repo}/settings/hooks/{id}/redeliver_dead",
            post(hooks::redeliver_dead),
        )
        .route(
            "/{owner}/{repo}/settings/hooks/{id}/deliveries/{delivery_id}",
            get(hooks::delivery),
        )
        .route(
            "/{owner}/{repo}/settings/hooks/{id}/deliveries/{delivery_id}/redeliver",
            post(hooks::redeliver),
        )
        .route(
            "/{owner}/{repo}/settings",
            get(repo_settings::show).post(repo_settings::save_options),
        )
        .route(
            "/{owner}/{repo}/settings/collaborators",
            post(repo_settings::add_collaborator),
        )
        .route(
            "/{owner}/{repo}/settings/collaborators/{login}/delete",
            post(repo_settings::remove_collaborator),
        )
        .route(
            "/{owner}/{repo}/settings/branches/edit",
            get(repo_settings::rule_form).post(repo_settings::save_rule),
        )
        .route(
            "/{owner}/{repo}/settings/branches/delete",
            post(repo_settings::delete_rule),
        )
        .route(
            "/{owner}/{repo}/settings/delete",
            post(repo_settings::delete),
        )
        .route("/{owner}/{repo}/issues", get(issues::list))
        .route(
            "/{owner}/{repo}/issues/new",
            get(issues::new_form).post(issues::create),
        )
        .route("/{owner}/{repo}/issues/{index}", get(issues::show))
        .route(
            "/{owner}/{repo}/issues/{index}/delete",
            post(issues::delete),
        )
        .route(
            "/{owner}/{repo}/labels",
            get(issues::labels).post(issues::create_label),
        )
        .route(
            "/{owner}/{repo}/labels/{id}/delete",
            post(issues::delete_label),
        )
        .route(
            "/{owner}/{repo}/issues/{index}/comment",
            post(issues::comment),
        )
        .route("/{owner}/{repo}/issues/{index}/state", post(issues::state))
        .route("/{owner}/{repo}/issues/{index}/labels", post(issues::label))
        .route(
            "/{owner}/{repo}/issues/{index}/assignees",
            post(issues::assign),
        )
        .route("/{owner}/{repo}/pulls", get(pulls::list))
        .route(
            "/{owner}/{repo}/compare",
            get(pulls::compare).post(pulls::create),
        )
        .route("/{owner}/{repo}/pulls/{index}", get(pulls::show))
        .route("/{owner}/{repo}/pulls/{index}/review", post(pulls::review))
        .route("/{owner}/{repo}/pulls/{index}/merge", post(pulls::merge))
        .route("/{owner}/{repo}/pulls/{index}/state", post(pulls::state))
        .route(
            "/{owner}/{repo}/settings/merges",
            post(repo_settings::save_merges),
        )
        .route("/{owner}", get(repos::owner_page))
        .route("/{owner}/{repo}", get(repos::repo_page))
        .layer(axum::middleware::from_fn(error::sign_in_target))
}
