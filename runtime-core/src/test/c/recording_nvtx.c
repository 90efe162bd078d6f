/*
 * A test NVTX injection library: what a profiler's would be, reduced to recording every call it
 * receives. NvtxInjectionTest compiles it with gcc and names it in NVTX_INJECTION64_PATH for a
 * child JVM; the child reads the record back through recording_nvtx_log().
 *
 * It knows the NVTX v3 binary interface from its own declarations below (from
 * include/nvtx3/nvtxDetail/nvtxTypes.h and nvToolsExt.h), independent of Gatun's Java rendition;
 * when the test finds the CUDA headers it compiles with -DRECORDING_NVTX_CHECK_HEADERS, and these
 * declarations are checked against the real ones.
 *
 * One line per call:
 *   EVENT domain=D message=M category=C color=XXXXXXXX|none payload=P|none depth=N thread=T [range=R]
 * depth is this thread's push/pop depth in that domain after the call, T a small number per OS
 * thread (in order of first call), R the id of a start/end range. A pop names the range it closes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*fn_t)(void);
typedef fn_t **table_t;

typedef struct {
    size_t struct_size;
    int (*GetModuleFunctionTable)(int module, table_t *out_table, unsigned int *out_size);
} callbacks_t;

typedef struct {
    size_t struct_size;
    uint32_t version;
    uint32_t reserved0;
    void (*SetInjectionNvtxVersion)(uint32_t version);
} version_info_t;

typedef struct {
    uint16_t version;
    uint16_t size;
    uint32_t category;
    int32_t colorType;
    uint32_t color;
    int32_t payloadType;
    int32_t reserved0;
    union { uint64_t ullValue; int64_t llValue; double dValue; } payload;
    int32_t messageType;
    union { const char *ascii; const void *unicode; const void *registered; } message;
} attributes_t;

typedef const void *(*get_export_table_t)(uint32_t id);

enum { MODULE_CORE = 1, MODULE_CORE2 = 5 };
enum { ETID_CALLBACKS = 1, ETID_RESERVED0 = 2, ETID_VERSIONINFO = 3 };
enum { CORE_MarkEx = 1, CORE_RangeStartEx = 4, CORE_RangeEnd = 7, CORE_RangePushEx = 8, CORE_RangePop = 11,
       CORE_NameCategoryA = 12, CORE_SIZE = 16 };
enum { CORE2_DomainMarkEx = 1, CORE2_DomainRangeStartEx = 2, CORE2_DomainRangeEnd = 3, CORE2_DomainRangePushEx = 4,
       CORE2_DomainRangePop = 5, CORE2_DomainNameCategoryA = 8, CORE2_DomainRegisterStringA = 10,
       CORE2_DomainCreateA = 12, CORE2_SIZE = 16 };

#ifdef RECORDING_NVTX_CHECK_HEADERS
#include <nvtx3/nvToolsExt.h>
_Static_assert(sizeof(attributes_t) == sizeof(nvtxEventAttributes_t), "nvtxEventAttributes_t size");
_Static_assert(offsetof(attributes_t, payload) == offsetof(nvtxEventAttributes_t, payload), "payload offset");
_Static_assert(offsetof(attributes_t, messageType) == offsetof(nvtxEventAttributes_t, messageType), "messageType");
_Static_assert(offsetof(attributes_t, message) == offsetof(nvtxEventAttributes_t, message), "message offset");
_Static_assert(sizeof(callbacks_t) == sizeof(NvtxExportTableCallbacks), "NvtxExportTableCallbacks");
_Static_assert(sizeof(version_info_t) == sizeof(NvtxExportTableVersionInfo), "NvtxExportTableVersionInfo");
_Static_assert((int) CORE_SIZE == (int) NVTX_CBID_CORE_SIZE && (int) CORE2_SIZE == (int) NVTX_CBID_CORE2_SIZE,
               "table sizes");
_Static_assert((int) CORE_RangePushEx == (int) NVTX_CBID_CORE_RangePushEx
               && (int) CORE2_DomainCreateA == (int) NVTX_CBID_CORE2_DomainCreateA
               && (int) CORE2_DomainRegisterStringA == (int) NVTX_CBID_CORE2_DomainRegisterStringA, "callback ids");
#endif

typedef struct { char name[128]; } domain_t;
typedef struct { const domain_t *domain; char text[256]; } registered_t;

#define MAX_THREADS 64
#define MAX_DEPTH 64
#define MAX_DOMAINS 16
#define MAX_RANGES 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *log_text;
static size_t log_length, log_capacity;
static domain_t domains[MAX_DOMAINS];
static int domain_count;
static char range_names[MAX_RANGES][256];
static uint64_t next_range = 1;
static int thread_count;
static __thread int thread_number; /* 0: not numbered yet */
/* This thread's open push/pop ranges, per domain slot (0: the default domain). */
static __thread char stacks[MAX_DOMAINS + 1][MAX_DEPTH][256];
static __thread int depths[MAX_DOMAINS + 1];

static void append(const char *line) {
    size_t n = strlen(line);
    if (log_length + n + 1 > log_capacity) {
        log_capacity = (log_length + n + 1) * 2;
        log_text = realloc(log_text, log_capacity);
    }
    memcpy(log_text + log_length, line, n + 1);
    log_length += n;
}

static int thread_id(void) {
    if (thread_number == 0) {
        thread_number = ++thread_count;
    }
    return thread_number;
}

static const char *domain_name(const domain_t *d) { return d == NULL ? "(default)" : d->name; }
static int domain_slot(const domain_t *d) { return d == NULL ? 0 : (int) (d - domains) + 1; }

static void message_of(const attributes_t *a, char *out, size_t size) {
    if (a == NULL) {
        snprintf(out, size, "(null attributes)");
    } else if (a->version != 3 || a->size != sizeof(attributes_t)) {
        snprintf(out, size, "(bad attributes: version %u size %u)", a->version, a->size);
    } else if (a->messageType == 1) {
        snprintf(out, size, "%s", a->message.ascii);
    } else if (a->messageType == 3) {
        snprintf(out, size, "registered:%s", ((const registered_t *) a->message.registered)->text);
    } else {
        snprintf(out, size, "(message type %d)", a->messageType);
    }
}

/* Appends one line; called with the lock held. */
static void record(const char *event, const domain_t *d, const attributes_t *a, const char *message, uint64_t range) {
    char text[256], color[16], payload[32], line[1024];
    if (a != NULL) {
        message_of(a, text, sizeof text);
        message = text;
    }
    snprintf(color, sizeof color, a != NULL && a->colorType == 1 ? "%08X" : "none", a != NULL ? a->color : 0);
    if (a != NULL && a->payloadType == 2) {
        snprintf(payload, sizeof payload, "%lld", (long long) a->payload.llValue);
    } else {
        snprintf(payload, sizeof payload, a != NULL && a->payloadType != 0 ? "type%d" : "none",
                 a != NULL ? a->payloadType : 0);
    }
    int n = snprintf(line, sizeof line, "%s domain=%s message=%s category=%u color=%s payload=%s depth=%d thread=%d",
                     event, domain_name(d), message, a != NULL ? a->category : 0, color, payload,
                     depths[domain_slot(d)], thread_id());
    if (range != 0) {
        snprintf(line + n, sizeof line - n, " range=%llu", (unsigned long long) range);
    }
    strcat(line, "\n");
    append(line);
}

static int push(const domain_t *d, const attributes_t *a) {
    pthread_mutex_lock(&lock);
    int slot = domain_slot(d);
    if (depths[slot] < MAX_DEPTH) {
        message_of(a, stacks[slot][depths[slot]], 256);
    }
    depths[slot]++;
    record("push", d, a, NULL, 0);
    int depth = depths[slot] - 1; /* NVTX: the level of the range just started, from 0 */
    pthread_mutex_unlock(&lock);
    return depth;
}

static int pop(const domain_t *d) {
    pthread_mutex_lock(&lock);
    int slot = domain_slot(d);
    int depth = -1;
    if (depths[slot] == 0) {
        record("pop-unbalanced", d, NULL, "(none)", 0);
    } else {
        depths[slot]--;
        depth = depths[slot];
        record("pop", d, NULL, depths[slot] < MAX_DEPTH ? stacks[slot][depths[slot]] : "(deep)", 0);
    }
    pthread_mutex_unlock(&lock);
    return depth;
}

static uint64_t start(const domain_t *d, const attributes_t *a) {
    pthread_mutex_lock(&lock);
    uint64_t id = next_range++;
    if (id < MAX_RANGES) {
        message_of(a, range_names[id], 256);
    }
    record("start", d, a, NULL, id);
    pthread_mutex_unlock(&lock);
    return id;
}

static void end(const domain_t *d, uint64_t id) {
    pthread_mutex_lock(&lock);
    record("end", d, NULL, id > 0 && id < MAX_RANGES ? range_names[id] : "(unknown range)", id);
    pthread_mutex_unlock(&lock);
}

static void mark(const domain_t *d, const attributes_t *a) {
    pthread_mutex_lock(&lock);
    record("mark", d, a, NULL, 0);
    pthread_mutex_unlock(&lock);
}

static void name_category(const domain_t *d, uint32_t category, const char *name) {
    char text[300];
    snprintf(text, sizeof text, "%u=%s", category, name);
    pthread_mutex_lock(&lock);
    record("category", d, NULL, text, 0);
    pthread_mutex_unlock(&lock);
}

/* CORE: the default domain. */
static void core_mark_ex(const attributes_t *a) { mark(NULL, a); }
static uint64_t core_range_start_ex(const attributes_t *a) { return start(NULL, a); }
static void core_range_end(uint64_t id) { end(NULL, id); }
static int core_range_push_ex(const attributes_t *a) { return push(NULL, a); }
static int core_range_pop(void) { return pop(NULL); }
static void core_name_category_a(uint32_t category, const char *name) { name_category(NULL, category, name); }

/* CORE2: domains. */
static void domain_mark_ex(const domain_t *d, const attributes_t *a) { mark(d, a); }
static uint64_t domain_range_start_ex(const domain_t *d, const attributes_t *a) { return start(d, a); }
static void domain_range_end(const domain_t *d, uint64_t id) { end(d, id); }
static int domain_range_push_ex(const domain_t *d, const attributes_t *a) { return push(d, a); }
static int domain_range_pop(const domain_t *d) { return pop(d); }
static void domain_name_category_a(const domain_t *d, uint32_t c, const char *name) { name_category(d, c, name); }

static const registered_t *domain_register_string_a(const domain_t *d, const char *text) {
    registered_t *r = calloc(1, sizeof *r);
    r->domain = d;
    snprintf(r->text, sizeof r->text, "%s", text);
    pthread_mutex_lock(&lock);
    record("register", d, NULL, text, 0);
    pthread_mutex_unlock(&lock);
    return r;
}

static const domain_t *domain_create_a(const char *name) {
    pthread_mutex_lock(&lock);
    domain_t *d = NULL;
    for (int i = 0; i < domain_count; i++) {
        if (strcmp(domains[i].name, name) == 0) {
            d = &domains[i];
        }
    }
    if (d == NULL && domain_count < MAX_DOMAINS) {
        d = &domains[domain_count++];
        snprintf(d->name, sizeof d->name, "%s", name);
        record("domain", d, NULL, name, 0);
    }
    pthread_mutex_unlock(&lock);
    return d;
}

static void set_slot(table_t table, int id, fn_t function) { *table[id] = function; }

int InitializeInjectionNvtx2(get_export_table_t get_export_table) {
    char line[256];
    const callbacks_t *callbacks = get_export_table(ETID_CALLBACKS);
    const version_info_t *version = get_export_table(ETID_VERSIONINFO);
    snprintf(line, sizeof line, "init callbacks=%zu version=%u reserved-table=%s\n",
             callbacks != NULL ? callbacks->struct_size : 0, version != NULL ? version->version : 0,
             get_export_table(ETID_RESERVED0) == NULL ? "null" : "set");
    append(line);
    if (getenv("RECORDING_NVTX_DECLINE") != NULL) {
        append("init declined\n");
        return 0;
    }
    if (callbacks == NULL || callbacks->struct_size < sizeof(callbacks_t)) {
        return 0;
    }
    if (version != NULL && version->struct_size >= sizeof(version_info_t)) {
        version->SetInjectionNvtxVersion(3);
    }
    table_t core = NULL, core2 = NULL, unknown = NULL;
    unsigned int core_size = 0, core2_size = 0;
    int unknown_ok = callbacks->GetModuleFunctionTable(99, &unknown, NULL);
    if (!callbacks->GetModuleFunctionTable(MODULE_CORE, &core, &core_size)
            || !callbacks->GetModuleFunctionTable(MODULE_CORE2, &core2, &core2_size)) {
        return 0;
    }
    snprintf(line, sizeof line, "tables core=%u core2=%u core-first=%s core-last=%s unknown-module=%d\n", core_size,
             core2_size, core[0] == NULL ? "null" : "set", core[core_size] == NULL ? "null" : "set", unknown_ok);
    append(line);
    if (core_size < CORE_SIZE || core2_size < CORE2_SIZE) {
        return 0;
    }
    set_slot(core, CORE_MarkEx, (fn_t) core_mark_ex);
    set_slot(core, CORE_RangeStartEx, (fn_t) core_range_start_ex);
    set_slot(core, CORE_RangeEnd, (fn_t) core_range_end);
    set_slot(core, CORE_RangePushEx, (fn_t) core_range_push_ex);
    set_slot(core, CORE_RangePop, (fn_t) core_range_pop);
    set_slot(core, CORE_NameCategoryA, (fn_t) core_name_category_a);
    set_slot(core2, CORE2_DomainMarkEx, (fn_t) domain_mark_ex);
    set_slot(core2, CORE2_DomainRangeStartEx, (fn_t) domain_range_start_ex);
    set_slot(core2, CORE2_DomainRangeEnd, (fn_t) domain_range_end);
    set_slot(core2, CORE2_DomainRangePushEx, (fn_t) domain_range_push_ex);
    set_slot(core2, CORE2_DomainRangePop, (fn_t) domain_range_pop);
    set_slot(core2, CORE2_DomainNameCategoryA, (fn_t) domain_name_category_a);
    set_slot(core2, CORE2_DomainRegisterStringA, (fn_t) domain_register_string_a);
    set_slot(core2, CORE2_DomainCreateA, (fn_t) domain_create_a);
    return 1;
}

/* For the test: everything recorded so far, one call a line. */
const char *recording_nvtx_log(void) {
    pthread_mutex_lock(&lock);
    const char *text = log_text != NULL ? log_text : "";
    pthread_mutex_unlock(&lock);
    return text;
}
