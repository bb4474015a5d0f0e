/* sites.h: what kit.bpf.c and loader.c share of make lifecycle's sdt_site
 * (scripts/tracers/libbpf.py's Attached): how many sites one loader takes,
 * a USDT spec each (each site has its own cookie), where libbpf's default
 * is 256 specs; the sites-1000 build has 1,000. */
#ifndef KIT_SITES_H
#define KIT_SITES_H
#define MAX_SITES 1024
#endif
