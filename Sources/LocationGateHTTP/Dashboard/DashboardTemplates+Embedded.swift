// Generated from Sources/LocationGateHTTP/Dashboard/Templates/*.mustache (see Deploy/embed): do not edit; generate it again
// after changing one of those files. A test fails while this file and the folder differ.

/// Every `.mustache` file of `Templates`: its name and its text, byte for byte, in file-name
/// order. `DashboardTemplates.bundled` parses them.
enum EmbeddedTemplates {
    static let files: [(name: String, text: String)] = [
        (
            name: "activity.mustache",
            text: #"""
{{! Activity (DashboardPage.View): the app's admin audit trail, newest first (who changed which
    key, feature, retention or erasure, and who signed in to the dashboard), with a link to the
    older entries. }}
{{<layout}}
{{$content}}
{{#sections}}{{>section}}{{/sections}}
{{#older}}<p><a href="{{.}}">Older entries</a></p>{{/older}}
{{/content}}
{{/layout}}

"""#
        ),
        (
            name: "device.mustache",
            text: #"""
{{! A device (DashboardPage.View with its Device): its status over time as bands with its
    prompts marked, above the timeline (each event in words with its data as named fields and
    the decisions after it), the state as of a version with its service sessions and
    diagnostics, then who it is and the versions to see it as of. }}
{{<layout}}
{{$content}}
{{#sections}}{{>section}}{{/sections}}
{{#device}}<p class="muted">User <code>{{userID}}</code>, device <code>{{deviceID}}</code>. {{#truncated}}The first 1,000 events are shown. {{/truncated}}Inferred answers (O2) are marked <span class="inferred">inferred</span>.</p><p>State as of version: {{#versions}}{{^first()}} {{/first()}}<a href="?version={{.}}">{{.}}</a>{{/versions}}{{^versions}}no events{{/versions}}</p>{{/device}}
{{/content}}
{{/layout}}

"""#
        ),
        (
            name: "escalation.mustache",
            text: #"""
{{! Escalation (DashboardPage.View): the filters, then the escalation funnel, chart and table. }}
{{<layout}}
{{$content}}
{{#filters}}{{>filters}}{{/filters}}
{{#sections}}{{>section}}{{/sections}}
{{/content}}
{{/layout}}

"""#
        ),
        (
            name: "experiment.mustache",
            text: #"""
{{! An experiment (DashboardPage.View with its ExperimentSummary, SPEC §16): where it is in its
    life, a stop just made or refused; its variants as a chart (the exposed grant rate a bar
    with its 95% interval, the grant rate of those who answered a diamond) and the results'
    table, the API's numbers (exact values in data-value; the CSV link is the API's CSV); its
    definition; then, for an admin key's session while it runs, the stop form (a POST: the
    server's own Origin, the one field winner). A read key's session sees no form. }}
{{<layout}}
{{$content}}
{{#experiment}}
<p class="muted"><a href="/dashboard/experiments">All experiments</a> · key <code>{{key}}</code></p>
<p id="status" data-state="{{state}}">{{status}}</p>
{{#stopped}}<p class="saved" id="stopped">Stopped.</p>{{/stopped}}
{{#hasError}}<p class="error" id="error">{{error}}</p>{{/hasError}}
{{/experiment}}
{{#sections}}{{>section}}{{/sections}}
<p class="muted" id="reading">How to read it: the bar is each variant's exposed grant rate, the verdict (of the devices exposed to the variant, the share whose first answer to the prompt granted). The whisker is its 95% interval (Wilson's): the rate is likely within it. Where two variants' whiskers do not overlap, the difference is significant at the 5% level; where they overlap it may still be, so read p. The diamond is the grant rate of those who answered, which a variant that lets people skip the prompt raises while fewer grant in all. Uplift is the exposed grant rate minus the control's, in rate points; p is the two-sided p of the two-proportion z-test of the exposed grant rates.</p>
{{#experiment}}
{{#canStop}}<section><h2>Stop the experiment</h2><form class="filters" id="stop" method="post" action="{{stopAction}}">
<label>Winner<select name="winner">{{#winnerOptions}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/winnerOptions}}</select></label>
<button type="submit">Stop with this winner</button></form>
<p class="muted">From then on every device gets the winner, nothing more is exposed or counted, and the experiment cannot run again.</p></section>{{/canStop}}
{{#readOnly}}<p class="muted" id="read-only">Sign in with an admin key to stop this experiment.</p>{{/readOnly}}
{{/experiment}}
{{/content}}
{{/layout}}

"""#
        ),
        (
            name: "experiments.mustache",
            text: #"""
{{! Experiments (DashboardPage.View with its ExperimentList, SPEC §16): a card per experiment,
    its key a link to its page, its state and prompt kinds, once stopped its stopReason and
    winner, and a small chart of each variant's exposed grant rate with its 95% interval; then
    every experiment as a table with its CSV link. Every value is escaped; the chart is an
    SVGChart.Markup, the one value written unescaped. }}
{{<layout}}
{{$content}}
{{#experimentList}}
{{#entries}}<section class="experiment" data-experiment="{{key}}"><h2><a href="{{href}}">{{key}}</a></h2>
<p class="muted"><span class="state">{{state}}</span> · prompt {{prompts}}{{#hasOutcome}} · <span class="outcome">{{outcome}}</span>{{/hasOutcome}}</p>
{{{chart}}}</section>
{{/entries}}
{{^entries}}<section><p class="muted">No experiments yet: <code>PUT /v1/experiments/KEY</code> or <code>locgate experiments put</code> starts one.</p></section>
{{/entries}}
{{/experimentList}}
{{#sections}}{{>section}}{{/sections}}
<p class="muted">Each bar is a variant's exposed grant rate, the verdict: of the devices exposed to it, the share whose first answer granted. The whisker is its 95% interval. An experiment's page has the grant rate of those who answered, uplift and p.</p>
{{/content}}
{{/layout}}

"""#
        ),
        (
            name: "feature.mustache",
            text: #"""
{{! The feature editor (DashboardPage.View with its FeatureEditor, SPEC §15): the form, whose
    Preview button reads (a GET with preview=1 and the fields) and whose Save button writes (a
    POST: an admin key's session, the server's own Origin); then the preview as a chart and a
    table with its CSV link. Every value is escaped. Each field has a name of its own (a
    service's box `services.NAME`): the server refuses a field sent twice (SPEC §14). }}
{{<layout}}
{{$content}}
{{#editor}}
<p class="muted">Key <code>{{key}}</code>{{#isNew}}: not in the catalog yet{{/isNew}}.</p>
{{#saved}}<p class="saved" id="saved">Saved.</p>{{/saved}}
{{#error}}<p class="error" id="error">{{.}}</p>{{/error}}
<section><form class="editor" id="feature" method="get" action="{{action}}">
<input type="hidden" name="preview" value="1">
<label>Requires <select name="requires">{{#requiresOptions}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/requiresOptions}}</select></label>
<fieldset><legend>Services</legend>{{#serviceChoices}}<label class="check"><input type="checkbox" name="services.{{name}}" value="true"{{#checked}} checked{{/checked}}> {{name}}</label>{{/serviceChoices}}</fieldset>
<label>Accuracy <select name="accuracy">{{#accuracyOptions}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/accuracyOptions}}</select></label>
<label>Delivery <select name="delivery">{{#deliveryOptions}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/deliveryOptions}}</select></label>
<label>Background <select name="background">{{#backgroundOptions}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/backgroundOptions}}</select></label>
<label>Description <input name="description" value="{{descriptionText}}" maxlength="1000" size="40"></label>
<label>Minimum app version <input name="minAppVersion" value="{{minAppVersion}}" placeholder="e.g. 5.2" size="12"></label>
<label class="check"><input type="checkbox" name="disabled" value="true"{{#disabled}} checked{{/disabled}}> Disabled: off for every device (the kill switch)</label>
<p><button type="submit" id="preview">Preview</button> <button type="submit" id="save" formmethod="post" formaction="{{action}}">Save</button></p>
</form></section>
{{#previewed}}{{#unchanged}}<p id="unchanged">Saving this changes no device's decision.</p>{{/unchanged}}{{/previewed}}
{{/editor}}
{{#sections}}{{>section}}{{/sections}}
{{/content}}
{{/layout}}

"""#
        ),
        (
            name: "features.mustache",
            text: #"""
{{! Features (DashboardPage.View): each feature's devices now as a stacked bar (enabled, then
    the others by reason), and the table; no
    time filters (the catalog and the devices as they are). Then each feature's kill switch, a
    POST form one click away, and its editor's link (DashboardPage.Catalog, SPEC §15): shown to
    an admin key's session, which alone may change the catalog. }}
{{<layout}}
{{$content}}
{{#sections}}{{>section}}{{/sections}}
{{#catalog}}
<section><h2>Kill switches</h2><ul class="switches" id="switches">
{{#entries}}<li data-feature="{{key}}"><span>{{#canEdit}}<a href="{{href}}">{{key}}</a>{{/canEdit}}{{^canEdit}}{{key}}{{/canEdit}}</span> <span class="state">{{state}}</span>{{#canEdit}}<form method="post" action="{{switchAction}}"><input type="hidden" name="disabled" value="{{switchTo}}"><button type="submit">{{switchLabel}}</button></form>{{/canEdit}}</li>
{{/entries}}
{{^entries}}<li class="muted">No features yet.</li>{{/entries}}
</ul>
{{#canEdit}}<form class="filters" method="get" action="/dashboard/feature"><label>New feature key<input name="key" required maxlength="64"></label><button type="submit">Edit</button></form>{{/canEdit}}
{{^canEdit}}<p class="muted">Sign in with an admin key to edit features and use their kill switches.</p>{{/canEdit}}
</section>
{{/catalog}}
{{/content}}
{{/layout}}

"""#
        ),
        (
            name: "filters.mustache",
            text: #"""
{{! The filters of a page (DashboardPage.FiltersView): a GET form to the page itself, so a view
    is an address that can be shared. }}
<form class="filters" method="get" action="{{action}}">
<label>From<input type="date" name="from" value="{{from}}"></label>
<label>To<input type="date" name="to" value="{{to}}"></label>
{{#offersGroupBy}}<label>Group by<select name="groupBy">{{#groupOptions}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/groupOptions}}</select></label>{{/offersGroupBy}}
<label>Platform<select name="platform">{{#platformOptions}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/platformOptions}}</select></label>
<button type="submit">Apply</button></form>

"""#
        ),
        (
            name: "layout.mustache",
            text: #"""
{{! The document around every page: its head and styles (inline: the Content-Security-Policy
    allows nothing from outside and no script), the header with the navigation and the sign-out
    form once signed in, and the page's own markup in the block named content. Every page
    template starts with the layout and fills that block. A chart (svg.chart) is as wide as its
    box up to 34rem, its viewBox scaled to it; a table too wide for its box scrolls inside its
    .scroll box, never the page. }}
<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{layout.title}} · LocationGate</title>
<style>*{box-sizing:border-box}body{margin:0;font:15px/1.45 system-ui,-apple-system,sans-serif;color:#1c2430;background:#f6f7f9}
header{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center;padding:.6rem 1rem;background:#1c2430;color:#fff}
nav{display:flex;flex-wrap:wrap;gap:.2rem .8rem;align-items:center}nav a{color:#cfd8e3;text-decoration:none}
nav a.active{color:#fff;font-weight:600}.signout{display:inline;margin:0}.signout button{font:inherit;font-size:.85rem}
main{max-width:70rem;margin:0 auto;padding:1rem}h1{font-size:1.4rem;margin:.2rem 0 1rem}h2{font-size:1.1rem;margin:1.6rem 0 .5rem}
section{background:#fff;border:1px solid #dde2e8;border-radius:6px;padding:.8rem;margin-bottom:1rem;min-width:0}
.scroll{overflow-x:auto;max-width:100%}table{border-collapse:collapse;font-size:.85rem;min-width:100%}
th,td{border-bottom:1px solid #e5e9ee;padding:.3rem .5rem;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}td{overflow-wrap:break-word}td code{color:#5c6878}
svg.chart{display:block;width:100%;height:auto;max-width:34rem;margin:0 0 .4rem}.part{white-space:nowrap}
dl.fields{margin:0}dl.fields dt,dl.fields dd{display:inline;margin:0}dl.fields dt{color:#5c6878}dl.fields dd{overflow-wrap:anywhere}
form.filters{display:flex;flex-wrap:wrap;gap:.5rem;align-items:end;margin-bottom:1rem}
form.filters label{display:flex;flex-direction:column;font-size:.8rem}input,select,button{font:inherit;max-width:100%}
.csv{font-size:.8rem}.muted{color:#667085}.inferred{color:#8a4b00;font-weight:600}.error{color:#b42318}
code{font-size:.8rem;word-break:break-all}.editor label{display:block;margin:.45rem 0}.editor label.check{display:inline-block;margin:.2rem .9rem .2rem 0}
.editor fieldset{border:1px solid #dde2e8;border-radius:4px;margin:.45rem 0}.switches{list-style:none;margin:0;padding:0}
.switches li{display:flex;flex-wrap:wrap;gap:.3rem .8rem;align-items:center;padding:.25rem 0}.switches form{margin:0}.saved{color:#067647}</style></head>
<body><header><strong>LocationGate</strong><nav>{{#layout.navigation}}<a href="{{href}}"{{#active}} class="active"{{/active}}>{{label}}</a>{{/layout.navigation}}{{#layout.signedIn}}<form method="post" action="/dashboard/signout" class="signout"><button type="submit">Sign out</button></form>{{/layout.signedIn}}</nav></header>
<main><h1>{{layout.title}}</h1>{{$content}}{{/content}}</main></body></html>

"""#
        ),
        (
            name: "location-button.mustache",
            text: #"""
{{! The location button (DashboardPage.View): the filters, then the button's funnel, chart and table. The consent dialog's dismissals never reach the app, so its grant rate is an upper bound. }}
{{<layout}}
{{$content}}
<p class="muted">Android 17's location button: sessions, results, the consent dialogs (prompted, of which denied) and direct grants. A dismissed consent dialog reaches the app as nothing, so the dialog's grant rate is an upper bound.</p>
{{#filters}}{{>filters}}{{/filters}}
{{#sections}}{{>section}}{{/sections}}
{{/content}}
{{/layout}}

"""#
        ),
        (
            name: "message.mustache",
            text: #"""
{{! A page that only says what was wrong (MessageView): bad filters, a malformed device search. }}
{{<layout}}
{{$content}}
<p class="error">{{message}}</p>{{#back}}<p><a href="/dashboard">Back</a></p>{{/back}}
{{/content}}
{{/layout}}

"""#
        ),
        (
            name: "overview.mustache",
            text: #"""
{{! The overview (DashboardPage.View): the filters, devices by status (a stacked bar), grant and
    Always rates per prompt (bars), the trend (a line per prompt), each with its table, and the
    device search. }}
{{<layout}}
{{$content}}
{{#filters}}{{>filters}}{{/filters}}
{{#sections}}{{>section}}{{/sections}}
<h2>Find a device</h2><form class="filters" method="get" action="/dashboard/device">
<label>User id<input name="user" required></label><label>Device id<input name="device" required></label>
<button type="submit">Open</button></form>
{{/content}}
{{/layout}}

"""#
        ),
        (
            name: "prompts.mustache",
            text: #"""
{{! Prompts (DashboardPage.View): the filters, then a stacked bar of choices per prompt (per
    group when grouped), and the table with the choices folded into one cell. }}
{{<layout}}
{{$content}}
{{#filters}}{{>filters}}{{/filters}}
{{#sections}}{{>section}}{{/sections}}
{{/content}}
{{/layout}}

"""#
        ),
        (
            name: "section.mustache",
            text: #"""
{{! One chart with its table (DashboardPage.SectionView). The chart is one of the two values a
    template writes unescaped (triple mustache): an SVGChart.Markup, which only SVGChart makes,
    from numbers it formats and labels it escapes itself. The other is a table's rows
    (DashboardTable.Body, table.mustache). Nothing else may be written that way. }}
<section>{{{chart}}}{{#table}}{{>table}}{{/table}}</section>

"""#
        ),
        (
            name: "settings.mustache",
            text: #"""
{{! Settings (DashboardPage.View): the filters, then Settings changes (upgrades and downgrades
    over time, or per group), chart and table. }}
{{<layout}}
{{$content}}
{{#filters}}{{>filters}}{{/filters}}
{{#sections}}{{>section}}{{/sections}}
{{/content}}
{{/layout}}

"""#
        ),
        (
            name: "signin.mustache",
            text: #"""
{{! The sign-in form (SignInView), with the reason of a refused sign-in above it. }}
{{<layout}}
{{$content}}
{{#error}}<p class="error">{{.}}</p>{{/error}}<section><form method="post" action="/dashboard/signin">
<p><label>App key (read or admin scope)<br><input name="key" type="password" autocomplete="off" size="48" required></label></p>
<p><button type="submit">Sign in</button></p></form></section>
{{/content}}
{{/layout}}

"""#
        ),
        (
            name: "table.mustache",
            text: #"""
{{! A table (DashboardTable.View) with its CSV link: its head here, its rows as markup that
    only DashboardTable+Body.swift makes, escaping every text of every cell. The table scrolls
    inside its own box when it cannot fold to the box's width. }}
<h2>{{title}}</h2><p class="csv"><a href="{{csvHref}}">CSV</a></p><div class="scroll"><table id="{{id}}"><thead><tr>{{#columns}}<th>{{.}}</th>{{/columns}}</tr></thead><tbody>
{{{body}}}</tbody></table></div>

"""#
        ),
    ]
}
