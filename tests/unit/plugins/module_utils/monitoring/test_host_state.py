# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What a monitoring host already has (monitoring/host_state.py): packages, units, directories, apt lines."""

from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import host_state as hs

STATUS = """Package: prometheus
Status: install ok installed
Version: 2.42.0+ds-5+b5
Description: monitoring
 a continuation line: Version: 9

Package: prometheus-alertmanager
Status: deinstall ok config-files
Version: 0.25.0+ds-2+b6

Package: grafana
Status: install ok installed
Version: 1:11.1.0
"""


def test_installed_packages_are_read_from_dpkg_status():
    assert hs.installed_packages(STATUS) == {"prometheus": "2.42.0+ds-5+b5", "grafana": "1:11.1.0"}
    assert hs.installed_packages("") == {}


def test_missing_packages_honour_the_pinned_version():
    installed = hs.installed_packages(STATUS)
    assert hs.missing_packages(["prometheus", "prometheus-alertmanager"], installed) == ["prometheus-alertmanager"]
    assert hs.missing_packages(["prometheus=2.42.0+ds-5+b5", "grafana=11.1.0"], installed) == []
    assert hs.missing_packages(["prometheus=2.42.*"], installed) == []
    assert hs.missing_packages(["prometheus=2.45.0-1"], installed) == ["prometheus=2.45.0-1"]


def test_deb_files_name_their_package_and_version():
    assert hs.deb_spec("/srv/debs/prometheus_2.42.0+ds-5+b5_amd64.deb") == "prometheus=2.42.0+ds-5+b5"
    assert hs.deb_spec("grafana_1%3a11.1.0_amd64.deb") == "grafana=1:11.1.0"


DEBS = ["d/prometheus_2.42.0_amd64.deb", "d/prometheus-node-exporter_1.5.0_amd64.deb",
        "d/libjs-jquery_3.6.1_all.deb", "d/datacenter-gpu-manager-4-core_4.1_amd64.deb"]


def test_a_deb_install_takes_the_dependencies_and_only_the_wanted_services():
    assert hs.deb_selection(DEBS, ["prometheus-node-exporter"]) == [DEBS[1], DEBS[2]]
    assert hs.package_specs(["prometheus-node-exporter"], "deb_files", DEBS) == \
        ["prometheus-node-exporter=1.5.0", "libjs-jquery=3.6.1"]
    assert hs.package_specs(["prometheus-node-exporter"], "apt", DEBS) == ["prometheus-node-exporter"]


SHOW = """Id=prometheus.service
LoadState=loaded
ActiveState=active
UnitFileState=enabled

Id=prometheus-node-exporter.service
LoadState=loaded
ActiveState=inactive
UnitFileState=enabled

Id=grafana-server.service
LoadState=not-found
ActiveState=inactive
UnitFileState=
"""


def test_units_not_enabled_and_running_are_to_start():
    states = hs.unit_states(SHOW)
    assert states["prometheus.service"] == {"load": "loaded", "active": "active", "file_state": "enabled"}
    assert hs.units_to_start(["prometheus.service", "prometheus-node-exporter.service", "grafana-server.service",
                              "unknown.service"], states) == \
        ["prometheus-node-exporter.service", "grafana-server.service", "unknown.service"]


def test_directories_missing_or_with_other_attributes_are_to_fix():
    wanted = [{"path": "/etc/prometheus/rules", "owner": "root", "group": "prometheus", "mode": "0750"},
              {"path": "/var/lib/grafana/dashboards/pdserve"}, {"path": "/etc/dcgm-exporter"}]
    observed = {"/etc/prometheus/rules": {"owner": "root", "group": "prometheus", "mode": "0750"},
                "/var/lib/grafana/dashboards/pdserve": {"owner": "root", "group": "root", "mode": "0775"}}
    assert hs.directory_fixes(wanted, observed) == ["/var/lib/grafana/dashboards/pdserve", "/etc/dcgm-exporter"]


def test_apt_lines_are_found_in_their_files():
    files = {"/a.list": "# x\ndeb [trusted=yes] file:/srv ./  \n", "/b.list": "deb other ./\n"}
    wanted = [{"path": "/a.list", "line": "deb [trusted=yes] file:/srv ./"},
              {"path": "/b.list", "line": "deb [trusted=yes] file:/srv ./"},
              {"path": "/c.list", "line": "deb x"}]
    assert hs.lines_missing(wanted, files.get) == ["/b.list", "/c.list"]
