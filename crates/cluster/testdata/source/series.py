# Series: items of one series (parts, episodes, chapters), which share a title pattern and
# often an introduction, but are different items. Each part: (title, text); `link` when every
# item links to the same page (a show page).
SERIES = [
dict(lang="en", host="blog.rustacean.dev", path="/series/search-engine-part-{n}/", parts=[
    ("Building a search engine in Rust, part 1: tokenizing", "In this series we build a small full-text search engine from scratch in Rust, one piece at a time. We start with the tokenizer: splitting text into words, folding case and removing accents. We also look at why Unicode segmentation matters for languages without spaces and write tests for the edge cases."),
    ("Building a search engine in Rust, part 2: the inverted index", "In this series we build a small full-text search engine from scratch in Rust, one piece at a time. Today we store the tokens in an inverted index: a map from each term to the documents that contain it, with positions for phrase queries. We compare a hash map with a sorted vector and measure memory use on a corpus of one million short documents."),
    ("Building a search engine in Rust, part 3: ranking with BM25", "In this series we build a small full-text search engine from scratch in Rust, one piece at a time. With the index in place we can rank results. We implement BM25, explain what its two parameters do, and show how document length normalisation changes the order of results for short and long texts."),
]),
dict(lang="en", host="www.historyofthings.net", path="/transistor-{n}", parts=[
    ("The story of the transistor (Part I)", "The transistor is arguably the most important invention of the last century. In the first part of this story we go back to the vacuum tubes that powered early radios and computers, and to the laboratory where three physicists tried to find something smaller, cooler and more reliable."),
    ("The story of the transistor (Part II)", "The transistor is arguably the most important invention of the last century. In the second part we follow the first point-contact transistor out of the lab, the bitter dispute over who deserved the credit, and the move to silicon that made mass production possible."),
    ("The story of the transistor (Part III)", "The transistor is arguably the most important invention of the last century. In the final part we see how the integrated circuit put thousands and then billions of transistors on one chip, and how that changed everything from hearing aids to space travel."),
]),
dict(lang="en", host="podcasts.datatalk.fm", path="/show", link="https://podcasts.datatalk.fm/show", parts=[
    ("The Data Show, Episode 41: Feature stores", "Our guest this week runs the machine learning platform at a large retailer. We talk about why they built a feature store, what they would do differently, and how they keep training and serving data consistent. Plus listener questions about data contracts."),
    ("The Data Show, Episode 42: Streaming joins", "This week we dig into stream processing with an engineer who maintains an open source streaming engine. Why are joins over unbounded streams so hard, what are watermarks, and when should you just use a batch job instead? We also discuss her favourite debugging tools."),
    ("The Data Show, Episode 43: Data teams at start-ups", "Two founders join us to talk about hiring the first data person at a start-up. Should it be an analyst or an engineer, what tools are enough at the beginning, and when does a company need a data platform team? They share the mistakes they made in their first two years."),
]),
dict(lang="en", host="citiespodcast.org", path="/episodes", link="https://citiespodcast.org/episodes", parts=[
    ("Why cities are building fewer parking garages", "Parking garages used to be a standard part of every downtown development. Now several cities are cutting minimum parking requirements and even demolishing garages. We hear from planners and developers about what replaces them, and from shop owners who worry their customers will stay away."),
    ("The return of the night train", "Sleeper trains were written off a decade ago, but new routes are opening across the continent. We take an overnight journey, talk to the operators about the economics of beds on rails, and ask passengers why they chose twelve hours on a train over a short flight."),
]),
dict(lang="en", host="adventlog.dev", path="/2026/day-{n}", parts=[
    ("Advent of Code 2026, Day 1: Counting lanterns", "Every December I solve the Advent of Code puzzles in a language I want to learn better; this year it is Zig. Today's puzzle asks us to count lanterns in a grid, which mostly means parsing the input carefully. The second half needed a flood fill, which I wrote iteratively to avoid deep recursion."),
    ("Advent of Code 2026, Day 2: The broken conveyor", "Every December I solve the Advent of Code puzzles in a language I want to learn better; this year it is Zig. Day two is a simulation of a conveyor belt with missing segments. My first attempt was far too slow, so I switched to tracking intervals instead of individual cells, which brought the run time down to milliseconds."),
]),
dict(lang="ja", host="tech.hayabusa-media.jp", path="/series/db/{n}", parts=[
    ("連載 第1回 Rustで作るデータベース入門　ページとバッファ", "この連載では、Rustで小さなデータベースを一から作りながら、その仕組みを学んでいく。第1回は、データをディスク上の固定長のページに保存する方法と、よく使うページをメモリに置いておくバッファプールの設計を取り上げる。"),
    ("連載 第2回 Rustで作るデータベース入門　B木による索引", "この連載では、Rustで小さなデータベースを一から作りながら、その仕組みを学んでいく。第2回は、検索を速くするための索引として、B木の挿入と分割、範囲検索の実装を解説する。ページの再利用についても触れる。"),
    ("連載 第3回 Rustで作るデータベース入門　トランザクション", "この連載では、Rustで小さなデータベースを一から作りながら、その仕組みを学んでいく。第3回は、障害が起きてもデータを失わないための先行書き込みログと、複数の処理を同時に実行するためのロックの仕組みを実装する。"),
]),
dict(lang="ja", host="www.bunka-daily.jp", path="/interview/architect-{n}", parts=[
    ("建築家・森田玲子さんインタビュー　前編", "公共建築を数多く手がけてきた建築家の森田玲子さんに話を聞いた。前編では、建築を志したきっかけや、最初に設計した小さな図書館での苦労について語ってもらった。利用者の声を聞くことの大切さを学んだという。"),
    ("建築家・森田玲子さんインタビュー　後編", "公共建築を数多く手がけてきた建築家の森田玲子さんに話を聞いた。後編では、人口が減る地方都市で公共施設をどう残していくか、木造建築の可能性、そして若い設計者へのメッセージを聞いた。"),
]),
dict(lang="ja", host="www.kaigan-shimbun.jp", path="/feature/akiya-{n}", parts=[
    ("空き家は誰のものか（上）　相続放棄が広げる空白", "全国で空き家が増え続けている。所有者が分からない家も多く、自治体は対応に追われている。上では、相続放棄によって管理する人がいなくなった家の実態と、近隣の住民が抱える不安を取材した。"),
    ("空き家は誰のものか（下）　再生に挑む若者たち", "全国で空き家が増え続けている。所有者が分からない家も多く、自治体は対応に追われている。下では、古い家を改修してカフェや宿泊施設として再生する若者たちの取り組みと、資金面の課題を紹介する。"),
]),
dict(lang="zh", host="www.huaxia-caijing.cn", path="/special/chip-{n}.html", parts=[
    ("深度解析：芯片产业链（一）设计环节", "芯片产业链条长、环节多，本系列将分几期介绍各个环节的现状与挑战。本期关注芯片设计，分析国内设计企业在高端处理器和设计软件方面面临的瓶颈，以及人才培养的问题。"),
    ("深度解析：芯片产业链（二）制造环节", "芯片产业链条长、环节多，本系列将分几期介绍各个环节的现状与挑战。本期关注晶圆制造，介绍先进制程的发展、光刻设备的供应问题，以及国内晶圆厂的扩产计划。"),
    ("深度解析：芯片产业链（三）封装测试", "芯片产业链条长、环节多，本系列将分几期介绍各个环节的现状与挑战。本期关注封装测试，这是国内企业起步较早、实力较强的环节，先进封装正成为提升芯片性能的新途径。"),
]),
dict(lang="zh", host="www.wenhua-bao.cn", path="/doc/notes-{n}", parts=[
    ("纪录片《大河》观后记 第1集 源头", "纪录片《大河》沿着一条大河从源头走到入海口，记录沿岸人们的生活。第1集拍摄了高原上的源头地区，牧民随季节迁徙，冰川融水汇成溪流，画面壮美而安静。"),
    ("纪录片《大河》观后记 第2集 峡谷", "纪录片《大河》沿着一条大河从源头走到入海口，记录沿岸人们的生活。第2集进入峡谷地带，讲述修建水电站带来的变化，以及搬迁村民对故乡的记忆。"),
]),
dict(lang="de", host="blog.entwicklerhandbuch.de", path="/rust-lernen-teil-{n}/", parts=[
    ("Rust lernen – Teil 1: Ownership verstehen", "In dieser Serie lernen wir Rust Schritt für Schritt an kleinen Beispielen. Im ersten Teil geht es um Ownership: Wem gehört ein Wert, wann wird er freigegeben, und warum meckert der Compiler, wenn wir eine Variable nach dem Verschieben noch einmal benutzen?"),
    ("Rust lernen – Teil 2: Borrowing und Lebensdauern", "In dieser Serie lernen wir Rust Schritt für Schritt an kleinen Beispielen. Im zweiten Teil leihen wir Werte aus, statt sie zu verschieben, und lernen die Regeln für veränderliche und unveränderliche Referenzen kennen. Zum Schluss werfen wir einen ersten Blick auf Lebensdauer-Annotationen."),
    ("Rust lernen – Teil 3: Fehlerbehandlung", "In dieser Serie lernen wir Rust Schritt für Schritt an kleinen Beispielen. Im dritten Teil behandeln wir Fehler mit Result und dem Fragezeichen-Operator, schreiben eigene Fehlertypen und sehen, wann ein Programm besser abbricht."),
]),
dict(lang="de", host="www.kulturzeit-online.de", path="/serie/internet-folge-{n}", parts=[
    ("Serie: Die Geschichte des Internets, Folge 4", "Unsere Serie erzählt die Geschichte des Internets von den Anfängen bis heute. Folge 4 handelt von den frühen Neunzigern, als das World Wide Web aus einem Forschungszentrum in die Welt hinausging und die ersten Browser Bilder und Text zusammen zeigten."),
    ("Serie: Die Geschichte des Internets, Folge 5", "Unsere Serie erzählt die Geschichte des Internets von den Anfängen bis heute. Folge 5 widmet sich der Dotcom-Blase: Firmen ohne Gewinne erreichten Milliardenbewertungen, bis im Frühjahr 2000 die Kurse einbrachen."),
]),
dict(lang="fr", host="www.culture-hebdo.fr", path="/serie-ete/episode-{n}", parts=[
    ("Série d'été, épisode 1 : les phares de Bretagne", "Tout l'été, nous partons à la découverte des métiers disparus du littoral. Premier épisode : les gardiens de phare, qui vivaient des semaines entières isolés en mer pour entretenir la lumière. Nous avons rencontré l'un des derniers d'entre eux."),
    ("Série d'été, épisode 2 : les pêcheurs à pied", "Tout l'été, nous partons à la découverte des métiers disparus du littoral. Deuxième épisode : les pêcheurs à pied professionnels, qui récoltaient coques et palourdes à marée basse, un métier aujourd'hui encadré par des quotas stricts."),
    ("Série d'été, épisode 3 : les goémoniers", "Tout l'été, nous partons à la découverte des métiers disparus du littoral. Troisième épisode : les goémoniers, qui ramassaient les algues pour fertiliser les champs ou les brûler afin d'en extraire la soude."),
]),
dict(lang="fr", host="www.ouest-journal.fr", path="/dossier/rail-{n}", parts=[
    ("L'histoire du rail en Bretagne (1/3)", "Notre dossier retrace l'histoire du chemin de fer dans la région. Dans ce premier volet, nous revenons sur l'arrivée du train au XIXe siècle et sur les débats passionnés qu'elle a suscités dans les villes traversées."),
    ("L'histoire du rail en Bretagne (2/3)", "Notre dossier retrace l'histoire du chemin de fer dans la région. Ce deuxième volet raconte l'âge d'or des petites lignes départementales, qui desservaient les villages avant d'être fermées une à une après la guerre."),
    ("L'histoire du rail en Bretagne (3/3)", "Notre dossier retrace l'histoire du chemin de fer dans la région. Dans ce dernier volet, nous nous intéressons à la grande vitesse et aux projets de réouverture de lignes portés par les collectivités."),
]),
]

# Digests: issues of a newsletter or briefing under one title (or one title with a date or an
# issue number), each with other contents. `link` when every issue links to the same page.
DIGESTS = [
dict(lang="en", host="this-week-in-rust.example", path="/blog/2026/11/{n}/this-week-in-rust", issues=[
    ("This Week in Rust 580", "Hello and welcome to another issue of This Week in Rust! Updates from the Rust project: the compiler team proposed a new plan for parallel front-end builds. Project spotlight: a terminal file manager written in Rust. Call for participation: a GUI toolkit needs help with accessibility."),
    ("This Week in Rust 581", "Hello and welcome to another issue of This Week in Rust! Updates from the Rust project: the language team accepted an RFC for generators in stable Rust. Project spotlight: an embedded operating system for microcontrollers. Call for participation: a web framework is looking for documentation writers."),
    ("This Week in Rust 582", "Hello and welcome to another issue of This Week in Rust! Updates from the Rust project: the release team published the schedule for the next edition. Project spotlight: a static site generator with live reload. Call for participation: a game engine seeks testers for its new renderer."),
]),
dict(lang="en", host="www.frontierlinks.com", path="/2026/11/{n}/weekly-links/", issues=[
    ("Weekly links", "A few things I read this week. A long essay on why old buildings feel more human than new ones. An interview with the designer of a famous typeface. A paper on how birds navigate using the Earth's magnetic field. And a lovely video about restoring an old mechanical watch."),
    ("Weekly links", "A few things I read this week. A report on the decline of local newspapers and what replaced them. A thread about the worst bugs people have shipped to production. A recipe for sourdough that actually worked for me. And a short documentary about lighthouse keepers."),
    ("Weekly links", "A few things I read this week. An explainer on how undersea cables are repaired. A critique of productivity apps. Photographs from a village that has not changed in a century. And an argument for teaching statistics before calculus in schools."),
]),
dict(lang="en", host="news.morningpost.example", path="/briefing", link="https://news.morningpost.example/briefing", issues=[
    ("Morning briefing: what you need to know today", "Good morning. Lawmakers return today to debate the spending bill, with a vote expected before the weekend. Overnight, a fire at a chemical plant forced evacuations in the north. Markets in Asia opened higher on hopes of a trade deal. And in sport, the national team named its squad for the spring tournament."),
    ("Morning briefing: what you need to know today", "Good morning. Doctors begin a three-day strike over pay, and hospitals have cancelled thousands of appointments. A new report says house prices fell for the fourth month in a row. The space agency postponed a launch because of high winds. And an orchestra's lost score has been found in a church attic."),
    ("Morning briefing: what you need to know today", "Good morning. The government will publish its energy plan today, including support for heat pumps. Rail passengers face disruption after a signal failure near the capital. A court ruled against a tech giant in a privacy case. And the zoo welcomed two red panda cubs."),
]),
dict(lang="ja", host="news.gamewatch.jp", path="/weekly/{n}", issues=[
    ("週刊ゲームニュースまとめ", "今週のゲーム業界の主なニュースをまとめてお届けします。人気シリーズの新作発表会が開かれ、来春の発売が明らかになりました。携帯型ゲーム機の新モデルは予約が殺到しています。インディー作品の販売イベントも始まりました。"),
    ("週刊ゲームニュースまとめ", "今週のゲーム業界の主なニュースをまとめてお届けします。大手メーカーが四半期決算を発表し、海外での販売が好調でした。格闘ゲームの世界大会で日本の選手が優勝しました。クラウドゲームの新サービスも始まります。"),
    ("週刊ゲームニュースまとめ", "今週のゲーム業界の主なニュースをまとめてお届けします。老舗スタジオが新しいオンラインゲームを発表しました。eスポーツの国内リーグが来季の日程を公開しました。懐かしの名作が高画質になって復活します。"),
]),
dict(lang="ja", host="tech.hayabusa-media.jp", path="/daily/202611{n}", issues=[
    ("今日のテックニュース 11月26日", "本日の主なテクノロジー関連ニュースです。通信大手が新しい料金プランを発表しました。半導体メーカーが熊本に第2工場を建設すると明らかにしました。SNSの大規模な障害は夕方に復旧しました。"),
    ("今日のテックニュース 11月27日", "本日の主なテクノロジー関連ニュースです。大手ECサイトが年末セールの日程を発表しました。政府はAIの安全性に関する指針の案をまとめました。人気アプリの最新版で写真の編集機能が強化されました。"),
    ("今日のテックニュース 11月28日", "本日の主なテクノロジー関連ニュースです。電機メーカーが家庭用ロボットの販売を始めました。国内のスタートアップがAIチップの資金調達を発表しました。鉄道会社は駅の改札で顔認証の実験を行います。"),
]),
dict(lang="zh", host="www.huaxia-caijing.cn", path="/morning/2026-11-{n}.html", issues=[
    ("每日财经早报", "早上好，以下是今天值得关注的财经要闻。央行开展逆回购操作，市场流动性保持充裕。多家车企公布上月销量，新能源车型增长明显。国际油价小幅下跌。"),
    ("每日财经早报", "早上好，以下是今天值得关注的财经要闻。统计局发布工业企业利润数据，同比由负转正。两家大型券商宣布合并。黄金价格创下新高，投资者避险情绪升温。"),
    ("每日财经早报", "早上好，以下是今天值得关注的财经要闻。房地产新政在多个城市落地，首付比例下调。科技公司发布季度财报，云计算业务增长强劲。人民币汇率保持稳定。"),
]),
dict(lang="zh", host="tech.xinzhi-keji.cn", path="/weekly/{n}", issues=[
    ("科技周刊 第120期", "本期科技周刊为你精选一周科技动态。国产大模型发布新版本，推理能力大幅提升。一家手机厂商推出折叠屏新机。卫星互联网完成新一批组网发射。"),
    ("科技周刊 第121期", "本期科技周刊为你精选一周科技动态。人形机器人企业完成新一轮融资。电动汽车电池技术取得突破，充电时间大幅缩短。开源社区发布新的操作系统版本。"),
    ("科技周刊 第122期", "本期科技周刊为你精选一周科技动态。量子计算机实现新的纠错实验。智能眼镜销量快速增长。多地开放自动驾驶出租车试点。"),
]),
dict(lang="de", host="www.nordkurier-online.de", path="/newsletter/morgen", link="https://www.nordkurier-online.de/newsletter/morgen", issues=[
    ("Der Morgen kompakt", "Guten Morgen! Das ist heute wichtig: Der Bundestag berät über das neue Heizungsgesetz. Im Norden drohen Sturmböen und Hochwasser an der Küste. Die Lokführer kündigen einen neuen Streik an. Und im Sport: Der HSV gewinnt das Nordderby."),
    ("Der Morgen kompakt", "Guten Morgen! Das ist heute wichtig: Die Inflation ist im November leicht gestiegen. Ein großer Autozulieferer streicht tausende Stellen. In Hamburg eröffnet ein neues Museum für Fotografie. Und im Sport: Die Handballerinnen stehen im Halbfinale."),
    ("Der Morgen kompakt", "Guten Morgen! Das ist heute wichtig: Die Regierung stellt ihre Pläne für die Rente vor. Auf den Autobahnen wird es am Wochenende wegen der Ferien voll. Forscher entdecken eine neue Käferart im Harz. Und im Sport: Werder trennt sich von seinem Trainer."),
]),
dict(lang="de", host="www.techwelt.de", path="/wochenrueckblick-kw-{n}", issues=[
    ("Wochenrückblick KW 46", "Die wichtigsten Tech-Nachrichten der Woche im Überblick: Ein großer Chiphersteller baut ein Werk in Sachsen. Die EU verhängt eine Strafe gegen eine Suchmaschine. Ein beliebter Messenger führt verschlüsselte Backups ein."),
    ("Wochenrückblick KW 47", "Die wichtigsten Tech-Nachrichten der Woche im Überblick: Ein neues Smartphone mit Satellitenfunk kommt auf den Markt. Die Bundesnetzagentur versteigert weitere Frequenzen. Ein Start-up aus Berlin stellt einen Lieferroboter vor."),
    ("Wochenrückblick KW 48", "Die wichtigsten Tech-Nachrichten der Woche im Überblick: Ein Quanten-Start-up aus München sammelt Millionen ein. Die Bahn testet digitale Stellwerke auf einer Pilotstrecke. Ein Softwarekonzern übernimmt einen Konkurrenten."),
]),
dict(lang="fr", host="www.lequotidien-eco.fr", path="/revue-de-presse/{n}", issues=[
    ("La revue de presse du jour", "Bonjour, voici ce qu'il faut retenir de la presse ce matin. Les quotidiens reviennent sur le débat budgétaire à l'Assemblée. La presse régionale s'inquiète de la fermeture d'une usine dans le Nord. Et les journaux sportifs saluent la qualification de l'équipe de France."),
    ("La revue de presse du jour", "Bonjour, voici ce qu'il faut retenir de la presse ce matin. Les éditorialistes commentent la baisse des taux de la BCE. Plusieurs titres consacrent leur une aux intempéries en Bretagne. Et un hebdomadaire publie une enquête sur le prix des loyers à Paris."),
    ("La revue de presse du jour", "Bonjour, voici ce qu'il faut retenir de la presse ce matin. La grève dans les transports fait la une de tous les quotidiens. Un journal économique révèle le rachat d'une start-up lyonnaise. Et la presse culturelle salue la réouverture d'un grand musée."),
]),
dict(lang="fr", host="www.numerique-actu.fr", path="/essentiel-semaine/{n}", issues=[
    ("L'essentiel de la semaine", "Chaque vendredi, l'essentiel de l'actualité numérique. Cette semaine : un opérateur lance une offre fibre à prix cassé, la CNIL sanctionne un site de rencontres et une application française de covoiturage lève des fonds."),
    ("L'essentiel de la semaine", "Chaque vendredi, l'essentiel de l'actualité numérique. Cette semaine : un géant du commerce en ligne ouvre un entrepôt robotisé près de Lyon, un réseau social change ses règles de modération et les ventes de smartphones reculent."),
    ("L'essentiel de la semaine", "Chaque vendredi, l'essentiel de l'actualité numérique. Cette semaine : une start-up d'IA médicale lève 40 millions d'euros, le gouvernement présente sa stratégie cloud et un jeu vidéo bordelais cartonne à l'étranger."),
]),
]
