"""kbroker's web console: topics, messages, consumer groups and the cluster, served by the
broker itself on its HTTP listener (``kbroker.http.listen``) at ``/`` (issue 23).

Nothing else to start: the pages are plain HTML, a little vanilla JavaScript and CSS shipped
in this package (``static/``, package data; no CDN, it works offline), and the JSON endpoints
under ``/api/console/`` read the broker's own state. Rules:

- **Same paths as the wire protocol.** Every change (produce, create topic, alter configs,
  reset offsets, delete group) is made by calling the registered Kafka API handler in
  process with a typed request (``inproc.call_api``), so the console obeys exactly the rules
  a client meets — validation, error codes, meters. Reads use the calls those handlers use
  (``replicas.read_partition`` as Fetch, ``replicas.list_offset`` as ListOffsets, the group
  coordinator's describe/fetch-offsets as DescribeGroups/OffsetFetch, ``describe_resource``
  as DescribeConfigs, the quorum's DescribeQuorum answer). No rule is implemented twice.
- **Never block the event loop.** Message reads are bounded (``browse.MAX_LIMIT`` records,
  ``browse.MAX_READ_BYTES`` per request, values cut at ``browse.MAX_VALUE_BYTES``) and yield
  between partitions; request bodies are bounded by the listener.
- **Local view.** A node reads the partitions it leads; others are named with their leader
  (each node serves its own console). Groups are those this node coordinates.
- **Who may see it.** On a loopback listener (``127.0.0.0/8``, ``::1``, ``localhost``) the
  console is on whenever the HTTP listener is; on any other address it is off (404 with a
  hint) unless ``kbroker.console.enable=true``. With an authorizer configured, every API
  answer needs a login with the cluster's own credentials and acts as that principal: pages
  show only what its ACLs allow (``auth.py``).

Layout: ``routes.py`` (URL → handler, the enable check, login/logout), ``auth.py`` (sessions,
password checks, the principal of a request and its ACL checks), ``inproc.py`` (calling an API
handler in process), ``views.py`` (topics, topic, configs, produce), ``browse.py`` (the
message browser), ``groups.py``, ``cluster.py``, ``history.py`` (a ring buffer of key
metrics sampled every few seconds, for the cluster page's charts and topic rates),
``schemas.py`` (the Schemas page: the node's schema registry service read in process).
"""
from .routes import install

__all__ = ["install"]
