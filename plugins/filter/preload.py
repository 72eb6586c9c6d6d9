# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Load what every task needs once, in ansible-playbook's own process, so the task workers inherit it.

Ansible forks a worker for every task and host. What that worker loads (this collection's filters and their
module_utils, the connection plugin's and the lookups' option definitions, parsed from their YAML docs) dies with it,
and the next task's worker loads it again: a profile of an idempotent site.yml rerun found over a tenth of its time
there. A play keyword is rendered in ansible-playbook's own process before its tasks run; a filter named in it loads
every filter file of this collection there (Ansible's lookup of a collection's filter imports them all), and this one
loads the plugins below too.
"""

from ansible.plugins.loader import connection_loader, lookup_loader

# The connection Ansible uses unless told otherwise, and the lookup the inventories' router keys are made with. Both
# spellings: Ansible keeps a plugin's option definitions under the name it was asked for.
CONNECTIONS = ("ssh", "ansible.builtin.ssh")
LOOKUPS = ("password", "ansible.builtin.password")


def preloaded(value, connections=CONNECTIONS, lookups=LOOKUPS):
    """``value`` unchanged, after loading ``connections`` and ``lookups`` (plugin names) into this process."""
    for loader, names in ((connection_loader, connections), (lookup_loader, lookups)):
        for name in names or ():
            # A plugin this controller lacks is not preloaded; the task that needs it says so itself.
            loader.get(name, class_only=True)
    return value


class FilterModule(object):
    def filters(self):
        return {"preloaded": preloaded}
