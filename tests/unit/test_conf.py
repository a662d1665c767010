"""Configuration: every key declared, precedence defaults < site < --conf, clear errors."""
import pytest

from crawlkit.conf import ConfError, load_conf, load_specs, make_conf, parse_assignments


def test_every_key_has_a_default_and_a_description():
    specs = load_specs()
    assert len(specs) > 50
    for spec in specs.values():
        assert spec.description.strip(), spec.key
        assert "." in spec.key


def test_precedence_defaults_then_site_then_command_line(tmp_path):
    site = tmp_path / "site.toml"
    site.write_text("[fetcher]\nthreads = 4\nserver_delay = 0.5\n")
    conf = load_conf(site=site, overrides=parse_assignments(["fetcher.threads=8"]))
    assert conf["fetcher.threads"] == 8            # command line beats the site file
    assert conf["fetcher.server_delay"] == 0.5     # site file beats the default
    assert conf["fetcher.max_content"] == 1048576  # untouched default


def test_site_file_from_environment(tmp_path, monkeypatch):
    site = tmp_path / "env-site.toml"
    site.write_text("[generate]\nmax_per_host = 7\n")
    monkeypatch.setenv("CRAWLKIT_SITE", str(site))
    assert load_conf()["generate.max_per_host"] == 7


def test_unknown_key_is_refused_naming_key_and_file(tmp_path):
    site = tmp_path / "bad.toml"
    site.write_text("[fetcher]\nthreadz = 4\n")
    with pytest.raises(ConfError, match=r"bad.toml.*fetcher.threadz"):
        load_conf(site=site)
    with pytest.raises(ConfError, match="nope.key"):
        load_conf(overrides={"nope.key": "1"})


@pytest.mark.parametrize("key,value", [
    ("fetcher.threads", "many"), ("fetcher.respect_robots", "maybe"), ("fetcher.server_delay", "x"),
])
def test_wrong_type_from_command_line_is_refused(key, value):
    with pytest.raises(ConfError, match=key.replace(".", r"\.")):
        load_conf(overrides={key: value})


def test_wrong_type_in_site_file_is_refused(tmp_path):
    site = tmp_path / "typed.toml"
    site.write_text('[fetcher]\nthreads = "sixteen"\n')
    with pytest.raises(ConfError, match=r"typed.toml: fetcher.threads must be int"):
        load_conf(site=site)


@pytest.mark.parametrize("key,value,bound", [
    ("fetcher.threads", "-3", ">= 1"), ("fetcher.threads", "0", ">= 1"), ("generate.max_per_host", "-1", ">= 0"),
    ("fetcher.read_timeout", "0", "> 0"), ("scoring.damping", "1.5", "<= 1"), ("focus.learn_prior", "0", "> 0"),
    ("fetcher.server_delay", "inf", ">= 0"), ("scoring.opic_virtual_share", "nan", "<= 1"),
    ("schedule.max_interval", str(2**31), "<= 2147483647"),   # fetch_interval is an int column
])
def test_a_number_out_of_its_range_is_refused(key, value, bound):
    with pytest.raises(ConfError, match=f"{key.replace('.', '[.]')} must be .*{bound}.*got"):
        load_conf(overrides={key: value})


def test_the_range_holds_in_a_site_file_and_for_keys_that_come_in_order(tmp_path):
    site = tmp_path / "range.toml"
    site.write_text("[fetcher]\nthreads = -3\n")
    with pytest.raises(ConfError, match=r"range.toml: fetcher.threads must be >= 1, got -3"):
        load_conf(site=site)
    with pytest.raises(ConfError, match="schedule.min_interval .* must not be above schedule.default_interval"):
        make_conf(schedule__min_interval=40 * 86400)
    with pytest.raises(ConfError, match="export.range_min .* must not be above export.range_max"):
        load_conf(overrides={"export.range_min": "20"})
    assert make_conf(fetcher__threads=1, generate__max_per_host=0, scoring__damping=1.0)["fetcher.threads"] == 1


def test_every_default_is_in_its_range():
    for spec in load_specs().values():   # load_specs checks each default against its bounds
        if spec.type in ("int", "float"):
            assert spec.min is not None or spec.above is not None, spec.key


def test_malformed_site_file_names_the_file(tmp_path):
    site = tmp_path / "broken.toml"
    site.write_text("[fetcher\nthreads = 4\n")
    with pytest.raises(ConfError, match="broken.toml: not valid TOML"):
        load_conf(site=site)


def test_command_line_values_are_parsed_to_the_declared_type():
    conf = load_conf(overrides={"fetcher.respect_robots": "false", "fetcher.server_delay": "2",
                                "urls.hosts_deny": "a.com, .b.org", "scoring.combine": '{"pagerank": 1.0}'})
    assert conf["fetcher.respect_robots"] is False
    assert conf["fetcher.server_delay"] == 2.0
    assert conf["urls.hosts_deny"] == ["a.com", ".b.org"]
    assert conf["scoring.combine"] == {"pagerank": 1.0}


def test_a_regex_list_from_the_command_line_keeps_its_commas():
    # urls.exclude=a{1,3}b split at its comma would be two valid regexes, silently wrong
    assert load_conf(overrides={"urls.exclude": "a{1,3}b"})["urls.exclude"] == ["a{1,3}b"]
    both = load_conf(overrides={"urls.include": '["x{2,}", "/y/"]'})["urls.include"]
    assert both == ["x{2,}", "/y/"]
    with pytest.raises(ConfError, match=r"urls.include: 'a\(b' is not a regex"):
        load_conf(overrides={"urls.include": "a(b"})


def test_a_site_path_that_is_no_file_is_a_configuration_error(tmp_path):
    with pytest.raises(ConfError, match="Is a directory"):
        load_conf(site=tmp_path)


def test_make_conf_and_sections():
    conf = make_conf(fetcher__threads=3)
    assert conf.section("fetcher")["threads"] == 3
    assert conf.changed() == {"fetcher.threads": 3}
    with pytest.raises(ConfError):
        parse_assignments(["no-equals-sign"])


def test_a_focused_crawl_interleaves_focus_interleave_only():
    from crawlkit.scoring.job import round_scorers
    from crawlkit.stages.interleave import interleaved_metrics

    focused = make_conf(focus__words=["course"], scoring__scorer="focus")
    assert interleaved_metrics(focused) == [] and round_scorers(focused) == ["focus"]
    hedged = make_conf(focus__words=["course"], scoring__scorer="focus", focus__interleave=["score", "depth"])
    assert interleaved_metrics(hedged) == ["score", "depth"]
    assert round_scorers(hedged) == ["focus", "depth"]
    assert interleaved_metrics(make_conf()) == ["score", "backlinks"]


def test_spark_settings_follow_the_spark_keys_and_extra_wins():
    from crawlkit.spark import session_settings
    conf = load_conf(overrides=parse_assignments(["spark.shuffle_partitions=6", "spark.delta_snapshot_partitions=3"]))
    settings = session_settings(conf)
    assert settings["spark.sql.shuffle.partitions"] == "6"
    assert settings["spark.databricks.delta.snapshotPartitions"] == "3"
    override = load_conf(overrides=parse_assignments(
        ['spark.extra={"spark.databricks.delta.snapshotPartitions": "9"}']))
    assert session_settings(override)["spark.databricks.delta.snapshotPartitions"] == "9"


def test_under_spark_submit_its_settings_win_and_the_jars_are_merged():
    from crawlkit.spark import under_submit
    ours = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "8",
            "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
            "spark.jars": "/opt/ck/.jars/delta-spark.jar,/opt/ck/.jars/delta-storage.jar"}
    submitted = {"spark.ui.enabled": "true", "spark.master": "yarn",
                 "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
                 "spark.jars": "file:/home/op/hadoop-aws.jar,file:/home/op/delta-storage.jar"}
    settings = under_submit(ours, submitted)
    assert "spark.ui.enabled" not in settings                   # the operator's true stands
    assert settings["spark.sql.shuffle.partitions"] == "8"      # not given to spark-submit
    assert settings["spark.jars"].split(",") == [
        "file:/home/op/hadoop-aws.jar", "file:/home/op/delta-storage.jar", "/opt/ck/.jars/delta-spark.jar"]
    assert settings["spark.sql.extensions"] == ("org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions,"
                                                "io.delta.sql.DeltaSparkSessionExtension")
    assert under_submit(ours, {}) == ours
    # what crawlkit needs, and what the operator set through crawlkit's own conf, stay
    from crawlkit.spark import explicit_settings, session_settings
    conf = load_conf(overrides=parse_assignments(["spark.shuffle_partitions=240"]))
    cluster = {"spark.sql.session.timeZone": "America/New_York", "spark.sql.shuffle.partitions": "200",
               "spark.default.parallelism": "64"}
    settings = under_submit(session_settings(conf), cluster, explicit_settings(conf))
    assert settings["spark.sql.session.timeZone"] == "UTC"
    assert settings["spark.sql.shuffle.partitions"] == "240"
    assert "spark.default.parallelism" not in settings                  # the cluster's 64 stands


def test_score_list_needs_no_crawl_no_spark_and_no_lock(tmp_path, capsys, monkeypatch):
    import json

    from crawlkit import cli
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "run", lambda _args: pytest.fail("score --list started a stage"))
    assert cli.main(["score", "--list", "--crawl-dir", str(tmp_path / "busy")]) == 0
    assert "pagerank" in json.loads(capsys.readouterr().out)["scorers"]
    assert list(tmp_path.iterdir()) == []    # no crawl directory, no checkpoints made


def test_the_workers_python_is_this_one_only_when_crawlkit_starts_the_jvm():
    import sys

    from crawlkit.spark import python_for_workers
    own: dict[str, str] = {}
    python_for_workers(own)
    assert own["PYSPARK_PYTHON"] == sys.executable
    submitted = {"PYSPARK_GATEWAY_PORT": "41234"}
    python_for_workers(submitted)
    assert "PYSPARK_PYTHON" not in submitted           # the operator's, or Spark's python3


def test_a_site_file_shipped_in_the_zip_is_read_and_a_uri_refused(tmp_path):
    """spark-submit --py-files crawlkit.zip (scripts/cluster/package.sh puts conf/ in it):
    conf/crawlkit-site.toml inside the zip is the site file, as in a checkout."""
    import os
    import subprocess
    import sys
    import zipfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    shipped = tmp_path / "crawlkit.zip"
    with zipfile.ZipFile(shipped, "w") as zf:
        for folder, pattern in (("crawlkit", "*.py"), ("conf", "crawlkit-default.toml"), ("schemas", "*.json")):
            for path in sorted((root / folder).rglob(pattern)):
                zf.write(path, path.relative_to(root))
        zf.writestr("conf/crawlkit-site.toml", "[fetcher]\nthreads = 5\n")
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import crawlkit.conf as c; "
             "print(c.__file__); print(c.load_conf()['fetcher.threads'])")
    env = {k: v for k, v in os.environ.items() if k not in ("CRAWLKIT_HOME", "CRAWLKIT_SITE")}
    out = subprocess.run([sys.executable, "-c", probe, str(shipped)], capture_output=True, text=True,
                         cwd=tmp_path, env=env, check=True).stdout.split()
    assert out == [str(shipped / "crawlkit" / "conf.py"), "5"]
    with pytest.raises(ConfError, match="ship it with spark-submit --files"):
        load_conf(site="hdfs://nn:8020/crawl/site.toml")
    site = tmp_path / "site.toml"
    site.write_text("[fetcher]\nthreads = 6\n")
    for spelling in (f"file:{site}", site.as_uri()):             # Hadoop's file:/x and file:///x
        assert load_conf(site=spelling)["fetcher.threads"] == 6
    out = subprocess.run([sys.executable, "-c", probe.replace("load_conf()", "load_conf(site=sys.argv[2])"),
                          str(shipped), str(tmp_path / "nope.toml")], capture_output=True, text=True,
                         cwd=tmp_path, env=env)
    assert "site configuration file not found" in out.stderr   # a path beside the zip, not in it


@pytest.mark.parametrize("key,value", [
    ("generate.tie_break", "random"), ("schedule.kind", "adaptve"), ("parser.backend", "html5lib"),
    ("spark.log_level", "LOUD"), ("export.format", "csv"), ("scoring.engine", "gpu"),
])
def test_a_name_not_among_its_keys_choices_is_refused_at_load(key, value):
    # each used to pass the load and fail mid-round: schedule.kind in updatedb after the fetch
    with pytest.raises(ConfError, match=f"--conf: {key.replace('.', '[.]')} must be one of .*got '{value}'"):
        load_conf(overrides={key: value})
    # a choice in another case is that choice, spelled as declared (Spark takes info for INFO)
    assert load_conf(overrides={"spark.log_level": "info", "schedule.kind": "Adaptive"}).section("spark")["log_level"] == "INFO"
    assert make_conf(schedule__kind="ADAPTIVE")["schedule.kind"] == "adaptive"


@pytest.mark.parametrize("key,value,error", [
    ("generate.interleave", '["score", "pagernak"]', "generate.interleave: unknown scorer 'pagernak'"),
    ("scoring.combine", '{"pagernak": 1.0}', "scoring.combine: unknown scorer 'pagernak'"),
    ("scoring.scorer", "pagrank", "scoring.scorer: unknown scorer 'pagrank'"),
    ("generate.interleave", "[]", "generate.policy = interleave needs generate.interleave"),
    ("focus.amh_a", "0.5", r"focus.amh_a/b/c = 0.5, 0.4, 0.3 \(--conf, default, default\).*summing to 1"),
    ("scoring.personalization", "seed", "scoring.personalization must be empty, seeds or hosts"),
    ("fetcher.proxy", "localhost:3128", "fetcher.proxy must be an http:// or https:// URL"),
    ("urls.schemes", "[]", "urls.schemes must not be empty"),
    ("db.max_outlinks_per_page", "0", "db.max_outlinks_per_page must be >= 1"),
])
def test_values_that_fail_only_in_a_stage_are_refused_at_load(key, value, error):
    with pytest.raises(ConfError, match=error):
        load_conf(overrides={key: value})
    # the checks of values together see every layer: a later one may mend an earlier one
    assert load_conf(overrides={"focus.amh_a": "0.2", "focus.amh_b": "0.5"})["focus.amh_c"] == 0.3


def test_zero_means_no_limit_where_the_description_says_so():
    conf = load_conf(overrides={"fetcher.queue_capacity": "0", "scoring.checkpoint_every": "0"})
    assert (conf["fetcher.queue_capacity"], conf["scoring.checkpoint_every"]) == (0, 0)


def test_a_site_file_keeps_its_toml_types_and_spark_extra_takes_strings(tmp_path):
    site = tmp_path / "text.toml"
    site.write_text('[fetcher]\nthreads = "4"\n')
    with pytest.raises(ConfError, match=r"text.toml: fetcher.threads must be int, got '4'"):
        load_conf(site=site)       # it used to be read as 4; "no" for a bool as false
    assert load_conf(overrides={"fetcher.threads": "4"})["fetcher.threads"] == 4   # --conf is text
    with pytest.raises(ConfError, match=r"spark.extra must be dict\[str,str\]"):
        load_conf(overrides={"spark.extra": '{"spark.executor.memory": null}'})


def test_errors_name_the_file_or_option_each_value_came_from(tmp_path):
    site = tmp_path / "order.toml"
    site.write_text("[schedule]\nmin_interval = 7200\n")
    with pytest.raises(ConfError, match=r"schedule.min_interval \(7200, .*order.toml\) must not be above "
                                        r"schedule.default_interval \(3600, --conf\)"):
        load_conf(site=site, overrides={"schedule.default_interval": "3600"})
    with pytest.raises(ConfError, match="^--topN: crawl.topN must be >= 0, got -5"):
        load_conf(overrides={"crawl.topN": "5"}, flags={"--topN": {"crawl.topN": -5}})
    with pytest.raises(ConfError, match=r"'spark.executor.memory' \(a Spark setting: give it as spark.extra"):
        load_conf(overrides={"spark.executor.memory": "4g"})


def test_a_value_restated_at_its_default_still_counts_as_set(tmp_path):
    from crawlkit.cli import loop_rounds
    from crawlkit.spark import explicit_settings, session_settings

    site = tmp_path / "restate.toml"
    site.write_text("[spark]\nui = false\nshuffle_partitions = 8\n")
    assert explicit_settings(load_conf(site=site)) == {"spark.ui.enabled", "spark.sql.shuffle.partitions"}
    assert explicit_settings(load_conf()) == set()
    # crawl --every: crawl.rounds bounds the loop only where the operator set it
    assert loop_rounds(load_conf()) is None
    assert loop_rounds(load_conf(overrides={"crawl.rounds": "2"})) == 2
    assert loop_rounds(load_conf(flags={"--rounds": {"crawl.rounds": 3}})) == 3
    with pytest.raises(ConfError, match="spark.extra sets spark.sql.session.timeZone, which crawlkit sets"):
        session_settings(load_conf(overrides={"spark.extra": '{"spark.sql.session.timeZone": "CET"}'}))


@pytest.mark.parametrize("argv,error", [
    (["crawl", "--rounds", "2", "--until", "2030-01-01T00:00:00"], "--until needs --every"),
    (["crawl", "--every", "1h", "--now", "2030-01-01T00:00:00"], "--now and --every"),
])
def test_crawl_options_that_would_be_ignored_are_refused(argv, error, capsys):
    from crawlkit import cli
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2 and error in capsys.readouterr().err


def test_python_dash_m_crawlkit_is_the_command_line():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "crawlkit", "--help"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("usage: crawlkit")
