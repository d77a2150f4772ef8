"""Gitea wire compatibility: drives a running Postern with the client that
OpenAPI Generator makes from Gitea's own swagger (PyPI `gitea-api-client`),
for every operation Postern shares with Gitea. The client builds each
request as Gitea's tools do and validates each response against Gitea's
models (pydantic, strict types); any refusal, wrong status or body that does
not fit raises, and the run fails.

Run by tests/tests/gitea_client.rs with a server whose `[api]
V1_LIST_SHAPE = array`. Environment: POSTERN_URL (the API root, ending in
/api/v1), ADMIN and ADMIN_PASSWORD (a site administrator), USER and
USER_PASSWORD (a plain account), SSH_KEY (an OpenSSH public key line).
"""

import asyncio
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile

import gitea_api_client as g
from gitea_api_client.exceptions import ApiException

URL = os.environ["POSTERN_URL"]
checked = []


def client(user, password):
    conf = g.Configuration(host=URL, username=user, password=password)
    return g.ApiClient(conf)


async def call(name, fn, *args, status, **kwargs):
    """Calls `fn` through its `_with_http_info` form, checks the status
    Gitea documents for it, and returns the validated body."""
    info = getattr(fn.__self__, fn.__name__ + "_with_http_info")
    try:
        res = await info(*args, **kwargs)
    except ApiException as e:
        raise AssertionError(f"{name}: {e.status} {e.body}") from e
    if res.status_code != status:
        raise AssertionError(f"{name}: status {res.status_code}, Gitea answers {status}")
    checked.append(name)
    return res


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def push_sample(user, password, repo):
    """Pushes two commits on main, one on feature/x and a tag with the real
    git client; returns the working copy and the remote's URL."""
    work = tempfile.mkdtemp()
    host = URL.removesuffix("/api/v1").split("://", 1)[1]
    env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")

    def git(*args):
        subprocess.run(
            ["git", "-c", "user.name=Tools", "-c", "user.email=tools@example.com", "-c", "init.defaultBranch=main", *args],
            cwd=work, env=env, check=True, capture_output=True,
        )

    git("init", "-q")
    os.makedirs(os.path.join(work, ".ci"))
    with open(os.path.join(work, ".ci", "pipeline.yml"), "w") as f:
        f.write("steps: [build]\n")
    with open(os.path.join(work, "renovate.json"), "w") as f:
        f.write('{"extends": ["config:recommended"]}\n')
    git("add", ".")
    git("commit", "-q", "-m", "pipeline")
    with open(os.path.join(work, "README.md"), "w") as f:
        f.write("# Tools\n")
    git("add", ".")
    git("commit", "-q", "-m", "readme")
    git("tag", "-a", "v1.0", "-m", "first release")
    git("checkout", "-q", "-b", "feature/x")
    with open(os.path.join(work, "feature.txt"), "w") as f:
        f.write("x\n")
    git("add", ".")
    git("commit", "-q", "-m", "feature")
    remote = f"http://{user}:{password}@{host}/{user}/{repo}.git"
    git("push", "-q", remote, "main", "feature/x", "v1.0")
    return work, remote


def rev(work, spec):
    return subprocess.run(["git", "rev-parse", spec], cwd=work, check=True, capture_output=True, text=True).stdout.strip()


async def content(repos, owner, password, repo):
    """Every content and ref read Gitea's tools make, on a pushed repository."""
    work, remote = push_sample(owner, password, repo)
    main_sha = rev(work, "main")
    branches = (await call("repoListBranches", repos.repo_list_branches, owner, repo, status=200)).data
    expect([b.name for b in branches] == ["feature/x", "main"], f"branches: {branches}")
    one = (await call("repoGetBranch", repos.repo_get_branch, owner, repo, "feature/x", status=200)).data
    expect(one.commit.id == rev(work, "feature/x") and one.user_can_push, f"branch: {one}")
    f = (await call("repoGetContents", repos.repo_get_contents, owner, repo, ".ci/pipeline.yml", ref="main", status=200)).data
    expect(base64.b64decode(f.content) == b"steps: [build]\n" and f.type == "file", f"contents: {f}")
    expect(f.last_commit_sha == rev(work, "main~1"), f"last commit: {f}")
    top = (await call("repoGetContentsList", repos.repo_get_contents_list, owner, repo, ref="v1.0", status=200)).data
    expect(sorted(e.name for e in top) == [".ci", "README.md", "renovate.json"], f"top: {top}")
    raw = (await call("repoGetRawFile", repos.repo_get_raw_file, owner, repo, "renovate.json", ref="main", status=200)).data
    expect(json.loads(raw) == {"extends": ["config:recommended"]}, f"raw: {raw}")
    media = (await call("repoGetRawFileOrLFS", repos.repo_get_raw_file_or_lfs, owner, repo, "README.md", status=200)).data
    expect(media == b"# Tools\n", f"media: {media}")
    commits = await call("repoGetAllCommits", repos.repo_get_all_commits, owner, repo, sha="main", page=1, limit=1, status=200)
    expect([c.sha for c in commits.data] == [main_sha], f"commits: {commits.data}")
    expect({k.lower(): v for k, v in commits.headers.items()}.get("x-total-count") == "2", f"commit headers: {commits.headers}")
    single = (await call("repoGetSingleCommit", repos.repo_get_single_commit, owner, repo, main_sha, status=200)).data
    expect([x.filename for x in single.files] == ["README.md"] and single.stats.additions == 1, f"commit: {single}")
    refs = (await call("repoListAllGitRefs", repos.repo_list_all_git_refs, owner, repo, status=200)).data
    expect([r.ref for r in refs] == ["refs/heads/feature/x", "refs/heads/main", "refs/tags/v1.0"], f"refs: {refs}")
    heads = (await call("repoListGitRefs", repos.repo_list_git_refs, owner, repo, "heads/main", status=200)).data
    expect(heads[0].object.sha == main_sha, f"heads: {heads}")
    tags = (await call("repoListTags", repos.repo_list_tags, owner, repo, status=200)).data
    expect([t.name for t in tags] == ["v1.0"] and tags[0].commit.sha == main_sha, f"tags: {tags}")
    await call("repoGetTag", repos.repo_get_tag, owner, repo, "v1.0", status=200)
    tree = (await call("GetTree", repos.get_tree, owner, repo, "main", recursive=True, status=200)).data
    expect(".ci/pipeline.yml" in [e.path for e in tree.tree], f"tree: {tree}")
    blob = (await call("GetBlob", repos.get_blob, owner, repo, rev(work, "main:README.md"), status=200)).data
    expect(base64.b64decode(blob.content) == b"# Tools\n", f"blob: {blob}")
    cmp = (await call("repoCompareDiff", repos.repo_compare_diff, owner, repo, "main...feature/x", status=200)).data
    expect(cmp.total_commits == 1, f"compare: {cmp}")
    # Writes, as Renovate makes them: each a commit git then fetches.
    made = (
        await call(
            "repoCreateFile",
            repos.repo_create_file,
            owner,
            repo,
            "bot/config.json",
            g.CreateFileOptions(content=base64.b64encode(b"{}").decode(), message="Add bot config", branch="main"),
            status=201,
        )
    ).data
    expect(made.content.path == "bot/config.json" and made.commit.message == "Add bot config", f"created: {made}")
    changed = (
        await call(
            "repoUpdateFile",
            repos.repo_update_file,
            owner,
            repo,
            "bot/config.json",
            g.UpdateFileOptions(content=base64.b64encode(b"{ }").decode(), sha=made.content.sha, new_branch="bot/update"),
            status=200,
        )
    ).data
    expect(changed.commit.parents[0].sha == made.commit.sha, f"updated: {changed}")
    gone = (
        await call(
            "repoDeleteFile",
            repos.repo_delete_file,
            owner,
            repo,
            "bot/config.json",
            g.DeleteFileOptions(sha=changed.content.sha, branch="bot/update", message="Remove bot config"),
            status=200,
        )
    ).data
    expect(gone.content is None, f"deleted: {gone}")
    subprocess.run(["git", "fetch", "-q", remote, "main"], cwd=work, check=True, capture_output=True)
    expect(rev(work, "FETCH_HEAD") == made.commit.sha, "git fetches the API's commit")
    archive = await call("repoGetArchive", repos.repo_get_archive, owner, repo, "main.zip", status=200)
    expect(archive.raw_data.startswith(b"PK"), "archive: not a zip")
    # Commit statuses, as a CI system reports them and Renovate reads them.
    for state in ["pending", "success"]:
        reported = (
            await call(
                "repoCreateStatus",
                repos.repo_create_status,
                owner,
                repo,
                main_sha,
                g.CreateStatusOption(state=state, context="ci/build", target_url="https://ci.example.com/1", description=state),
                status=201,
            )
        ).data
        expect(reported.status == state and reported.creator.login == owner, f"status: {reported}")
    listed = (await call("repoListStatuses", repos.repo_list_statuses, owner, repo, main_sha, page=1, limit=10, status=200)).data
    expect([x.status for x in listed] == ["success", "pending"], f"statuses: {listed}")
    by_ref = (await call("repoListStatusesByRef", repos.repo_list_statuses_by_ref, owner, repo, "v1.0", sort="oldest", status=200)).data
    expect([x.status for x in by_ref] == ["pending", "success"], f"statuses by ref: {by_ref}")
    combined = (await call("repoGetCombinedStatusByRef", repos.repo_get_combined_status_by_ref, owner, repo, "v1.0", status=200)).data
    expect(
        combined.state == "success" and combined.sha == main_sha and combined.total_count == 1 and combined.repository.name == repo,
        f"combined: {combined}",
    )
    await pulls(repos, owner, repo, work)
    shutil.rmtree(work)


async def pulls(repos, owner, repo, work):
    """The pull request loop as Gitea's tools drive it: open, list, read,
    edit, commits, files, diff, a review, the merge."""
    opened = (
        await call(
            "repoCreatePullRequest",
            repos.repo_create_pull_request,
            owner,
            repo,
            body=g.CreatePullRequestOption(head="feature/x", base="main", title="Feature x", body="Adds x."),
            status=201,
        )
    ).data
    n = opened.number
    expect(opened.head.ref == "feature/x" and opened.head.sha == rev(work, "feature/x"), f"opened: {opened}")
    expect(opened.mergeable and not opened.merged and opened.state == "open", f"opened: {opened}")
    listed = (await call("repoListPullRequests", repos.repo_list_pull_requests, owner, repo, state="open", page=1, limit=10, status=200)).data
    expect([p.number for p in listed] == [n], f"pulls: {listed}")
    one = (await call("repoGetPullRequest", repos.repo_get_pull_request, owner, repo, n, status=200)).data
    expect(one.base.repo.name == repo and one.changed_files == 1, f"pull: {one}")
    edited = (
        await call(
            "repoEditPullRequest",
            repos.repo_edit_pull_request,
            owner,
            repo,
            n,
            body=g.EditPullRequestOption(title="Feature x, edited"),
            status=201,
        )
    ).data
    expect(edited.title == "Feature x, edited", f"edited: {edited}")
    commits = (await call("repoGetPullRequestCommits", repos.repo_get_pull_request_commits, owner, repo, n, status=200)).data
    expect([c.sha for c in commits] == [rev(work, "feature/x")], f"pull commits: {commits}")
    files = (await call("repoGetPullRequestFiles", repos.repo_get_pull_request_files, owner, repo, n, status=200)).data
    expect([f.filename for f in files] == ["feature.txt"] and files[0].status == "added", f"pull files: {files}")
    diff = (await call("repoDownloadPullDiffOrPatch", repos.repo_download_pull_diff_or_patch, owner, repo, n, "diff", status=200)).data
    expect("+x" in diff, f"diff: {diff}")
    review = (
        await call(
            "repoCreatePullReview",
            repos.repo_create_pull_review,
            owner,
            repo,
            n,
            g.CreatePullReviewOptions(
                event="COMMENT",
                body="One note.",
                comments=[g.CreatePullReviewComment(path="feature.txt", body="why x?", new_position=1)],
            ),
            status=200,
        )
    ).data
    expect(review.state == "COMMENT" and review.comments_count == 1, f"review: {review}")
    reviews = (await call("repoListPullReviews", repos.repo_list_pull_reviews, owner, repo, n, status=200)).data
    expect([r.id for r in reviews] == [review.id], f"reviews: {reviews}")
    await call("repoGetPullReview", repos.repo_get_pull_review, owner, repo, n, review.id, status=200)
    lines = (await call("repoGetPullReviewComments", repos.repo_get_pull_review_comments, owner, repo, n, review.id, status=200)).data
    expect([c.path for c in lines] == ["feature.txt"], f"review comments: {lines}")
    await call(
        "repoMergePullRequest",
        repos.repo_merge_pull_request,
        owner,
        repo,
        n,
        body=g.MergePullRequestOption(do="merge"),
        status=200,
    )
    await call("repoPullRequestIsMerged", repos.repo_pull_request_is_merged, owner, repo, n, status=204)
    merged = (await call("repoGetPullRequest", repos.repo_get_pull_request, owner, repo, n, status=200)).data
    expect(merged.merged and merged.state == "closed" and merged.merged_by.login == owner, f"merged: {merged}")


async def main():
    admin_name = os.environ["ADMIN"]
    user_name = os.environ["USER"]
    async with client(admin_name, os.environ["ADMIN_PASSWORD"]) as admin, client(
        user_name, os.environ["USER_PASSWORD"]
    ) as plain:
        misc = g.MiscellaneousApi(admin)
        settings = g.SettingsApi(admin)
        users = g.UserApi(admin)
        repos = g.RepositoryApi(admin)
        orgs = g.OrganizationApi(admin)
        admin_api = g.AdminApi(admin)

        v = (await call("getVersion", misc.get_version, status=200)).data
        expect(v.version and v.version[0].isdigit(), f"version: {v}")
        s = (await call("getGeneralAPISettings", settings.get_general_api_settings, status=200)).data
        expect(
            s.default_paging_num == 20
            and s.max_response_items == 100
            and s.default_git_trees_per_page == 1000
            and s.default_max_blob_size == 10485760,
            f"settings: {s}",
        )

        me = (await call("userGetCurrent", users.user_get_current, status=200)).data
        expect(me.login == admin_name and me.is_admin, f"me: {me}")

        # Users, as an administrator sees them, paged as Gitea pages.
        listed = await call("adminSearchUsers", admin_api.admin_search_users, page=1, limit=1, status=200)
        expect(len(listed.data) == 1, f"one user per page: {listed.data}")
        headers = {k.lower(): v for k, v in listed.headers.items()}
        expect(headers.get("x-total-count") == "2", f"X-Total-Count: {headers}")
        expect('rel="next"' in headers.get("link", ""), f"Link: {headers}")
        everyone = (await call("adminSearchUsers", admin_api.admin_search_users, status=200)).data
        expect({u.login for u in everyone} == {admin_name, user_name}, f"users: {everyone}")
        edited = (
            await call(
                "adminEditUser",
                admin_api.admin_edit_user,
                user_name,
                g.EditUserOption(source_id=0, login_name="", full_name="Plain User", website=""),
                status=200,
            )
        ).data
        expect(edited.full_name == "Plain User", f"edited: {edited}")

        # Provisioning, as Terraform's gitea_user does it.
        made = (
            await call(
                "adminCreateUser",
                admin_api.admin_create_user,
                g.CreateUserOption(
                    username="provisioned",
                    email="provisioned@example.com",
                    password=os.environ["USER_PASSWORD"],
                    full_name="Provisioned",
                    must_change_password=False,
                    send_notify=False,
                    source_id=0,
                    login_name="",
                ),
                status=201,
            )
        ).data
        expect(made.login == "provisioned" and made.full_name == "Provisioned", f"made: {made}")
        their_org = (
            await call("adminCreateOrg", admin_api.admin_create_org, "provisioned", g.CreateOrgOption(username="theirs"), status=201)
        ).data
        expect(their_org.username == "theirs", f"their org: {their_org}")
        their_repo = (
            await call("adminCreateRepo", admin_api.admin_create_repo, "provisioned", g.CreateRepoOption(name="theirs"), status=201)
        ).data
        expect(their_repo.owner.login == "provisioned" and their_repo.empty, f"their repo: {their_repo}")
        await call("repoDelete", repos.repo_delete, "provisioned", "theirs", status=204)
        await call(
            "adminCreateUser",
            admin_api.admin_create_user,
            g.CreateUserOption(username="leaving", email="leaving@example.com", password=os.environ["USER_PASSWORD"]),
            status=201,
        )
        await call("adminCreateRepo", admin_api.admin_create_repo, "leaving", g.CreateRepoOption(name="left"), status=201)
        await call("adminDeleteUser", admin_api.admin_delete_user, "leaving", purge=True, status=204)

        # Repositories.
        repo = (
            await call(
                "createCurrentUserRepo",
                users.create_current_user_repo,
                g.CreateRepoOption(
                    name="tools",
                    description="made by Gitea's client",
                    private=True,
                    auto_init=False,
                    default_branch="main",
                    trust_model="default",
                ),
                status=201,
            )
        ).data
        expect(repo.full_name == f"{admin_name}/tools" and repo.private, f"repo: {repo}")
        got = (await call("repoGet", repos.repo_get, admin_name, "tools", status=200)).data
        expect(got.id == repo.id and got.permissions.admin, f"got: {got}")
        mine = (await call("userCurrentListRepos", users.user_current_list_repos, page=1, limit=50, status=200)).data
        expect([r.name for r in mine] == ["tools"], f"mine: {mine}")
        found = (await call("repoSearch", repos.repo_search, q="tool", page=1, limit=10, status=200)).data
        expect(found.ok and [r.full_name for r in found.data] == [f"{admin_name}/tools"], f"search: {found}")
        plain_repos = g.RepositoryApi(plain)
        unseen = (await call("repoSearch", plain_repos.repo_search, q="tool", status=200)).data
        expect(unseen.data == [], f"a private repository is found by a stranger: {unseen}")
        people = (await call("userSearch", users.user_search, q=user_name, page=1, limit=10, status=200)).data
        expect(people.ok and [u.login for u in people.data] == [user_name], f"user search: {people}")

        # Content and refs, read back from what the real git client pushed.
        await content(repos, admin_name, os.environ["ADMIN_PASSWORD"], "tools")
        edited_repo = (
            await call(
                "repoEdit",
                repos.repo_edit,
                admin_name,
                "tools",
                g.EditRepoOption(
                    description="edited by Gitea's client",
                    website="https://tools.example.com",
                    allow_squash_merge=False,
                    default_merge_style="rebase",
                    has_wiki=False,
                    default_branch="main",
                ),
                status=200,
            )
        ).data
        expect(
            edited_repo.description == "edited by Gitea's client"
            and edited_repo.allow_squash_merge is False
            and edited_repo.allow_rebase is True
            and edited_repo.default_merge_style == "rebase"
            and edited_repo.empty is False,
            f"edited repo: {edited_repo}",
        )

        # Collaborators.
        await call(
            "repoAddCollaborator",
            repos.repo_add_collaborator,
            admin_name,
            "tools",
            user_name,
            g.AddCollaboratorOption(permission="write"),
            status=204,
        )
        collaborators = (
            await call("repoListCollaborators", repos.repo_list_collaborators, admin_name, "tools", page=1, limit=10, status=200)
        ).data
        expect([c.login for c in collaborators] == [user_name], f"collaborators: {collaborators}")
        await call("repoCheckCollaborator", repos.repo_check_collaborator, admin_name, "tools", user_name, status=204)
        permission = (
            await call("repoGetRepoPermissions", repos.repo_get_repo_permissions, admin_name, "tools", user_name, status=200)
        ).data
        expect(
            permission.permission == "write" and permission.role_name == "Write" and permission.user.login == user_name,
            f"permission: {permission}",
        )
        by_id = (await call("repoGetByID", repos.repo_get_by_id, edited_repo.id, status=200)).data
        expect(by_id.full_name == f"{admin_name}/tools", f"by id: {by_id}")

        # Branch protection, with every field of Gitea's option.
        full = g.CreateBranchProtectionOption(
            rule_name="main",
            enable_push=True,
            enable_push_whitelist=True,
            push_whitelist_usernames=[admin_name],
            push_whitelist_teams=[],
            push_whitelist_deploy_keys=False,
            enable_force_push=False,
            enable_force_push_allowlist=False,
            force_push_allowlist_usernames=[],
            force_push_allowlist_teams=[],
            force_push_allowlist_deploy_keys=False,
            enable_merge_whitelist=False,
            merge_whitelist_usernames=[],
            merge_whitelist_teams=[],
            enable_status_check=True,
            status_check_contexts=["ci/build"],
            required_approvals=2,
            enable_approvals_whitelist=True,
            approvals_whitelist_username=[admin_name],
            approvals_whitelist_teams=[],
            block_on_rejected_reviews=True,
            block_on_official_review_requests=True,
            block_on_outdated_branch=True,
            block_admin_merge_override=True,
            dismiss_stale_approvals=True,
            ignore_stale_approvals=False,
            enable_bypass_allowlist=False,
            bypass_allowlist_usernames=[],
            bypass_allowlist_teams=[],
            require_signed_commits=False,
            protected_file_patterns="*.lock",
            unprotected_file_patterns="docs/**",
            priority=3,
        )
        rule = (
            await call("repoCreateBranchProtection", repos.repo_create_branch_protection, admin_name, "tools", body=full, status=201)
        ).data
        for field in full.model_fields_set:
            expect(getattr(rule, field) == getattr(full, field), f"{field} shown back: {getattr(rule, field)!r}")
        rules = (
            await call("repoListBranchProtection", repos.repo_list_branch_protection, admin_name, "tools", status=200)
        ).data
        expect([r.rule_name for r in rules] == ["main"], f"rules: {rules}")
        await call("repoGetBranchProtection", repos.repo_get_branch_protection, admin_name, "tools", "main", status=200)
        changed = (
            await call(
                "repoEditBranchProtection",
                repos.repo_edit_branch_protection,
                admin_name,
                "tools",
                "main",
                body=g.EditBranchProtectionOption(block_on_rejected_reviews=False, required_approvals=1),
                status=200,
            )
        ).data
        expect(
            changed.block_on_rejected_reviews is False and changed.required_approvals == 1 and changed.priority == 3,
            f"edited rule: {changed}",
        )
        await call("repoDeleteBranchProtection", repos.repo_delete_branch_protection, admin_name, "tools", "main", status=204)

        # Hooks, as Gitea's client registers them.
        hook_option = g.CreateHookOption(
            type="gitea",
            config={"url": "http://127.0.0.1:9/hook", "content_type": "json"},
            events=["push"],
            active=True,
            branch_filter="*",
            name="ci",
        )
        hook = (await call("repoCreateHook", repos.repo_create_hook, admin_name, "tools", body=hook_option, status=201)).data
        hooks = (await call("repoListHooks", repos.repo_list_hooks, admin_name, "tools", page=1, limit=10, status=200)).data
        expect([h.id for h in hooks] == [hook.id], f"hooks: {hooks}")
        await call("repoGetHook", repos.repo_get_hook, admin_name, "tools", hook.id, status=200)
        edited_hook = (
            await call(
                "repoEditHook",
                repos.repo_edit_hook,
                admin_name,
                "tools",
                hook.id,
                body=g.EditHookOption(active=False),
                status=200,
            )
        ).data
        expect(edited_hook.active is False, f"edited hook: {edited_hook}")
        await call("repoDeleteHook", repos.repo_delete_hook, admin_name, "tools", hook.id, status=204)
        await call(
            "adminCreateHook",
            admin_api.admin_create_hook,
            g.CreateHookOption(type="gitea", config={"url": "http://127.0.0.1:9/site", "content_type": "json"}, events=["repository"]),
            status=201,
        )
        site_hooks = (await call("adminListHooks", admin_api.admin_list_hooks, page=1, limit=10, status=200)).data
        expect(len(site_hooks) == 1, f"site hooks: {site_hooks}")

        # Organizations and teams.
        org = (
            await call(
                "orgCreate",
                orgs.org_create,
                g.CreateOrgOption(username="tooling", full_name="Tooling", description="", visibility="public"),
                status=201,
            )
        ).data
        expect(org.username == "tooling", f"org: {org}")
        await call("orgGet", orgs.org_get, "tooling", status=200)
        await call("orgEdit", orgs.org_edit, "tooling", g.EditOrgOption(full_name="Tooling Inc.", website=""), status=200)
        team = (
            await call(
                "orgCreateTeam",
                orgs.org_create_team,
                "tooling",
                g.CreateTeamOption(
                    name="builders",
                    description="",
                    includes_all_repositories=False,
                    can_create_org_repo=False,
                    units=["repo.code"],
                    units_map={"repo.code": "write", "repo.issues": "read"},
                ),
                status=201,
            )
        ).data
        expect(team.permission == "write", f"units_map gives write: {team}")
        teams = (await call("orgListTeams", orgs.org_list_teams, "tooling", page=1, limit=10, status=200)).data
        expect({t.name for t in teams} >= {"builders"}, f"teams: {teams}")
        await call("orgAddTeamMember", orgs.org_add_team_member, team.id, user_name, status=204)
        members = (await call("orgListTeamMembers", orgs.org_list_team_members, team.id, page=1, limit=10, status=200)).data
        expect([m.login for m in members] == [user_name], f"members: {members}")
        got_team = (await call("orgGetTeam", orgs.org_get_team, team.id, status=200)).data
        expect(got_team.name == "builders" and got_team.organization.username == "tooling", f"team: {got_team}")
        member = (await call("orgListTeamMember", orgs.org_list_team_member, team.id, user_name, status=200)).data
        expect(member.login == user_name, f"team member: {member}")
        org_members = (await call("orgListMembers", orgs.org_list_members, "tooling", page=1, limit=10, status=200)).data
        expect(sorted(m.login for m in org_members) == sorted([admin_name, user_name]), f"org members: {org_members}")
        await call("orgIsMember", orgs.org_is_member, "tooling", user_name, status=204)
        my_orgs = (await call("orgListCurrentUserOrgs", orgs.org_list_current_user_orgs, page=1, limit=10, status=200)).data
        expect([o.username for o in my_orgs] == ["tooling"], f"my orgs: {my_orgs}")
        their_orgs = (await call("orgListUserOrgs", orgs.org_list_user_orgs, user_name, page=1, limit=10, status=200)).data
        expect([o.username for o in their_orgs] == ["tooling"], f"their orgs: {their_orgs}")
        every_org = (await call("orgGetAll", orgs.org_get_all, page=1, limit=50, status=200)).data
        expect("tooling" in [o.username for o in every_org], f"orgs: {every_org}")
        admin_orgs = (await call("adminGetAllOrgs", admin_api.admin_get_all_orgs, page=1, limit=50, status=200)).data
        expect("tooling" in [o.username for o in admin_orgs], f"admin orgs: {admin_orgs}")
        them = (await call("userGet", users.user_get, user_name, status=200)).data
        expect(them.login == user_name and them.id > 0, f"user: {them}")
        admin_repos = (await call("userListRepos", users.user_list_repos, admin_name, page=1, limit=50, status=200)).data
        expect("tools" in [r.name for r in admin_repos], f"user repos: {admin_repos}")
        org_repo = (
            await call("createOrgRepo", orgs.create_org_repo, "tooling", g.CreateRepoOption(name="site"), status=201)
        ).data
        expect(org_repo.owner.login == "tooling", f"org repo: {org_repo}")
        await call("orgAddTeamRepository", orgs.org_add_team_repository, team.id, "tooling", "site", status=204)
        team_repos = (await call("orgListTeamRepos", orgs.org_list_team_repos, team.id, page=1, limit=10, status=200)).data
        expect([r.name for r in team_repos] == ["site"], f"team repos: {team_repos}")
        org_repos = (await call("orgListRepos", orgs.org_list_repos, "tooling", page=1, limit=10, status=200)).data
        expect([r.name for r in org_repos] == ["site"], f"org repos: {org_repos}")
        # A repository made by the administrator, given to the organization.
        await call("createCurrentUserRepo", users.create_current_user_repo, g.CreateRepoOption(name="moving"), status=201)
        moved = (
            await call(
                "repoTransfer",
                repos.repo_transfer,
                admin_name,
                "moving",
                g.TransferRepoOption(new_owner="tooling"),
                status=202,
            )
        ).data
        expect(moved.full_name == "tooling/moving", f"transferred: {moved}")
        await call("repoDelete", repos.repo_delete, "tooling", "moving", status=204)
        await call(
            "orgCreateHook",
            orgs.org_create_hook,
            "tooling",
            g.CreateHookOption(type="gitea", config={"url": "http://127.0.0.1:9/org", "content_type": "json"}, events=["push"]),
            status=201,
        )
        org_hooks = (await call("orgListHooks", orgs.org_list_hooks, "tooling", status=200)).data
        expect(len(org_hooks) == 1, f"org hooks: {org_hooks}")
        await call("orgRemoveTeamMember", orgs.org_remove_team_member, team.id, user_name, status=204)

        # The plain user's own keys and tokens.
        plain_users = g.UserApi(plain)
        key = (
            await call(
                "userCurrentPostKey",
                plain_users.user_current_post_key,
                g.CreateKeyOption(key=os.environ["SSH_KEY"], title="laptop", read_only=False),
                status=201,
            )
        ).data
        keys = (await call("userCurrentListKeys", plain_users.user_current_list_keys, page=1, limit=10, status=200)).data
        expect([k.id for k in keys] == [key.id], f"keys: {keys}")
        one_key = (await call("userCurrentGetKey", plain_users.user_current_get_key, key.id, status=200)).data
        expect(one_key.title == "laptop" and one_key.id == key.id, f"key: {one_key}")
        await call("userCurrentDeleteKey", plain_users.user_current_delete_key, key.id, status=204)
        token = (
            await call(
                "userCreateToken",
                plain_users.user_create_token,
                user_name,
                g.CreateAccessTokenOption(name="renovate", scopes=["read:repository", "write:user"]),
                status=201,
            )
        ).data
        expect(token.sha1 and token.token_last_eight == token.sha1[-8:], f"token: {token}")
        tokens = (await call("userGetTokens", plain_users.user_get_tokens, user_name, page=1, limit=10, status=200)).data
        expect([t.name for t in tokens] == ["renovate"], f"tokens: {tokens}")
        await call("userDeleteAccessToken", plain_users.user_delete_access_token, user_name, "renovate", status=204)

        # Issues, comments and labels, in the repository the plain user
        # collaborates on (write).
        issues = g.IssueApi(admin)
        plain_issues = g.IssueApi(plain)
        bug = (
            await call(
                "issueCreateLabel",
                issues.issue_create_label,
                admin_name,
                "tools",
                body=g.CreateLabelOption(name="bug", color="#e11d21", description="Something is wrong"),
                status=201,
            )
        ).data
        expect(bug.name == "bug" and bug.color == "e11d21", f"label: {bug}")
        await call("issueGetLabel", issues.issue_get_label, admin_name, "tools", bug.id, status=200)
        await call(
            "issueEditLabel",
            issues.issue_edit_label,
            admin_name,
            "tools",
            bug.id,
            body=g.EditLabelOption(description="A defect"),
            status=200,
        )
        labels = (await call("issueListLabels", issues.issue_list_labels, admin_name, "tools", page=1, limit=10, status=200)).data
        expect([label.name for label in labels] == ["bug"], f"labels: {labels}")
        opened = (
            await call(
                "issueCreateIssue",
                plain_issues.issue_create_issue,
                admin_name,
                "tools",
                body=g.CreateIssueOption(title="It breaks", body="**Steps**", assignees=[user_name], labels=[bug.id]),
                status=201,
            )
        ).data
        expect(
            opened.number == 2 and opened.state == "open" and opened.user.login == user_name
            and [a.login for a in opened.assignees] == [user_name] and [label.name for label in opened.labels] == ["bug"],
            # Number 2: the pull request of the content checks took 1 of the
            # repository's one sequence.
            f"issue: {opened}",
        )
        listed_issues = (
            await call("issueListIssues", issues.issue_list_issues, admin_name, "tools", state="open", page=1, limit=10, status=200)
        ).data
        expect([i.number for i in listed_issues] == [opened.number], f"issues: {listed_issues}")
        await call("issueGetIssue", issues.issue_get_issue, admin_name, "tools", opened.number, status=200)
        comment = (
            await call(
                "issueCreateComment",
                plain_issues.issue_create_comment,
                admin_name,
                "tools",
                opened.number,
                body=g.CreateIssueCommentOption(body="Seen on main too."),
                status=201,
            )
        ).data
        await call(
            "issueEditComment",
            plain_issues.issue_edit_comment,
            admin_name,
            "tools",
            comment.id,
            body=g.EditIssueCommentOption(body="Seen on main and release."),
            status=200,
        )
        comments = (await call("issueGetComments", issues.issue_get_comments, admin_name, "tools", opened.number, status=200)).data
        expect([c.body for c in comments] == ["Seen on main and release."], f"comments: {comments}")
        await call("issueRemoveLabel", issues.issue_remove_label, admin_name, "tools", opened.number, bug.id, status=204)
        closed = (
            await call(
                "issueEditIssue",
                plain_issues.issue_edit_issue,
                admin_name,
                "tools",
                opened.number,
                body=g.EditIssueOption(state="closed"),
                status=201,
            )
        ).data
        expect(closed.state == "closed" and closed.closed_at is not None, f"closed: {closed}")
        await call("issueLockIssue", issues.issue_lock_issue, admin_name, "tools", opened.number, status=204)
        await call("issueUnlockIssue", issues.issue_unlock_issue, admin_name, "tools", opened.number, status=204)
        await call("issueDeleteComment", plain_issues.issue_delete_comment, admin_name, "tools", comment.id, status=204)
        await call("issueDelete", issues.issue_delete, admin_name, "tools", opened.number, status=204)
        await call("issueDeleteLabel", issues.issue_delete_label, admin_name, "tools", bug.id, status=204)

        await call("repoDelete", repos.repo_delete, admin_name, "tools", status=204)

    print(f"gitea client conformance: {len(checked)} calls, {len(set(checked))} operations, all accepted and valid")


try:
    asyncio.run(main())
except AssertionError as e:
    print(f"gitea client conformance failed: {e}", file=sys.stderr)
    sys.exit(1)
